// The mutable record of one running episode inside a rollout batch, how a `replace` is traced back to the
// model calls it removed, and how the episode becomes a trajectory (with each call kept or dropped for RSFT).
// Owned by agent/loop.ts; nothing else mutates an episode.

import { SPECIAL_TOKENS, decodeTokens } from '../model/tokenizer';
import { parseActionTags } from './actions';
import type { DomainEnvironment, EnvTask, JsonValue, ToolSpec } from './environment';
import type { HarnessManifest, HarnessMessage, TaskView } from './harness-contract';
import type { HarnessFailure } from './harness-runner';
import type { EpisodeStopReason, ModelCallRecord, Trajectory, TurnRecord } from './trajectory';
import { TRAJECTORY_SCHEMA_VERSION } from './trajectory';

export interface Episode<Hidden> {
  task: EnvTask<Hidden>;
  sampleIndex: number;
  envState: JsonValue;
  harnessState: JsonValue;
  messages: HarnessMessage[];
  /** Per message of `messages`: the index of the model call that wrote it (assistant messages), else null. */
  messageCalls: Array<number | null>;
  /** Model calls whose assistant message a `replace` removed from the conversation. */
  removedCalls: Set<number>;
  /** The next model call's turn number (0-based). */
  turn: number;
  formatErrorsLeft: number;
  illegalActionsLeft: number;
  modelCalls: ModelCallRecord[];
  turns: TurnRecord[];
  generatedTokens: number;
  promptTokens: number;
  finalAnswer: string | null;
  done: boolean;
  stopReason: EpisodeStopReason | null;
  stopDetail: string;
  failure: HarnessFailure | null;
}

export function newEpisode<Hidden>(task: EnvTask<Hidden>, sampleIndex: number, envState: JsonValue, manifest: HarnessManifest): Episode<Hidden> {
  return {
    task,
    sampleIndex,
    envState,
    harnessState: null,
    messages: [],
    messageCalls: [],
    removedCalls: new Set(),
    turn: 0,
    formatErrorsLeft: manifest.config.retryBudgets.formatErrors,
    illegalActionsLeft: manifest.config.retryBudgets.illegalActions,
    modelCalls: [],
    turns: [],
    generatedTokens: 0,
    promptTokens: 0,
    finalAnswer: null,
    done: false,
    stopReason: null,
    stopDetail: '',
    failure: null,
  };
}

export function endEpisode(ep: Episode<unknown>, reason: EpisodeStopReason, detail = '', failure: HarnessFailure | null = null): void {
  ep.done = true;
  ep.stopReason = reason;
  ep.stopDetail = detail;
  ep.failure = failure;
}

export function endWithFailure(ep: Episode<unknown>, failure: HarnessFailure): void {
  const reason = failure.kind === 'contract-violation' ? 'contract-violation' : 'harness-failure';
  endEpisode(ep, reason, `${failure.kind}${failure.hook ? ` in ${failure.hook}` : ''}: ${failure.reason}`, failure);
}

/** Sets the conversation after an append: new messages belong to no model call. */
export function appendMessages(ep: Episode<unknown>, added: readonly HarnessMessage[], call: number | null = null): void {
  ep.messages = [...ep.messages, ...added];
  ep.messageCalls = [...ep.messageCalls, ...added.map(() => call)];
}

/**
 * Sets the conversation after a `replace`. Each new message that equals (role and content) an old one, in
 * order, is that message carried over; a model call whose message was not carried over was removed.
 */
export function replaceMessages(ep: Episode<unknown>, next: readonly HarnessMessage[]): void {
  const prev = ep.messages;
  const owners: Array<number | null> = [];
  let from = 0;
  for (const m of next) {
    let found = -1;
    for (let j = from; j < prev.length; j++) {
      if (prev[j].role === m.role && prev[j].content === m.content) {
        found = j;
        break;
      }
    }
    owners.push(found >= 0 ? ep.messageCalls[found] ?? null : null);
    if (found >= 0) from = found + 1;
  }
  const carried = new Set(owners);
  for (const call of ep.messageCalls) if (call !== null && !carried.has(call)) ep.removedCalls.add(call);
  ep.messages = [...next];
  ep.messageCalls = owners;
}

/**
 * Which model calls RSFT trains. A call is dropped when the harness replaced its action by a tool call the
 * model did not write (its text held no tool call, and the tool input is not in its text: the forced
 * first call on the task's question), or when its action was not executed (a format error, an answer the
 * harness rejected, an illegal move, an action that never ran) and a later `replace` removed its message
 * (the resampling form of a retry). A `replace` that only shortens the context drops nothing: the calls
 * it removes were executed.
 */
export function markKeptCalls(ep: Episode<unknown>, tools: readonly ToolSpec[]): ModelCallRecord[] {
  return ep.modelCalls.map((call, index) => {
    const turn = ep.turns.find((t) => t.turn === call.turn);
    const action = turn?.action;
    const text = assistantContent(call.generatedTokens);
    const input = action?.kind === 'tool' ? action.input.trim() : '';
    const harnessMade = action?.kind === 'tool' && parseActionTags(text, tools).kind !== 'tool' && !(input !== '' && text.includes(input));
    const executed = turn !== undefined && action?.kind !== 'none' && turn.submit?.outcome !== 'illegal' && !harnessMade;
    const dropReason = harnessMade ? 'harness-made' : !executed && ep.removedCalls.has(index) ? 'rejected-removed' : null;
    return { ...call, kept: dropReason === null, dropReason };
  });
}

/** The visible part of a task: the only task data harness code receives. */
export function taskView(task: EnvTask<unknown>): TaskView {
  return { id: task.id, question: task.question, view: task.view };
}

/** The model's message text for the conversation: its tokens without the closing END / EOT. */
export function assistantContent(tokens: readonly number[]): string {
  let end = tokens.length;
  while (end > 0 && (tokens[end - 1] === SPECIAL_TOKENS.END || tokens[end - 1] === SPECIAL_TOKENS.EOT)) end--;
  return decodeTokens(tokens.slice(0, end));
}

export interface TrajectoryContext {
  runSeed: number;
  step: number;
  manifest: HarnessManifest;
}

/** Scores a finished episode (violations and harness failures score 0) and freezes it as a trajectory. */
export function toTrajectory<Hidden>(ep: Episode<Hidden>, env: DomainEnvironment<Hidden>, ctx: TrajectoryContext): Trajectory {
  const stopReason = ep.stopReason ?? 'turn-limit';
  const scored = stopReason !== 'contract-violation' && stopReason !== 'harness-failure';
  return {
    schemaVersion: TRAJECTORY_SCHEMA_VERSION,
    trajectoryId: `${ep.task.id}#${ep.sampleIndex}@${ctx.step}`,
    taskId: ep.task.id,
    itemId: ep.task.itemId,
    sampleIndex: ep.sampleIndex,
    runSeed: ctx.runSeed,
    step: ctx.step,
    harnessId: ctx.manifest.harnessId,
    harnessName: ctx.manifest.config.name,
    domain: env.domain,
    modelCalls: markKeptCalls(ep, env.tools),
    turns: ep.turns,
    messages: ep.messages,
    finalAnswer: ep.finalAnswer,
    stopReason,
    stopDetail: ep.stopDetail,
    harnessFailure: ep.failure,
    reward: scored ? env.verify(ep.task, ep.envState) : 0,
    tokenCounts: { prompt: ep.promptTokens, generated: ep.generatedTokens },
  };
}
