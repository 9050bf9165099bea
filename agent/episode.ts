// The mutable record of one running episode inside a rollout batch, and how it becomes a trajectory.
// Owned by agent/loop.ts; nothing else mutates an episode.

import { SPECIAL_TOKENS, decodeTokens } from '../model/tokenizer';
import type { DomainEnvironment, EnvTask, JsonValue } from './environment';
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
    modelCalls: ep.modelCalls,
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
