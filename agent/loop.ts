// The agent loop, owned by the system: runs a batch of episodes (tasks x samples) turn by turn. Each turn
// sends every live episode's prompt to the model backend as one batched `generate` call, parses actions
// (one batched harness call if the harness overrides parsing), executes tools and submissions in the
// environment, and asks the harness for feedback and its stop rule (one batched call). Finished episodes
// drop out. Training rollouts, harness scoring and test evaluation all run through here.

import type { GenerateRequest, ModelBackend } from '../model/backend';
import { SPECIAL_TOKENS, renderChatPrompt } from '../model/tokenizer';
import { actionStopStrings } from './actions';
import { AgentConfigError, AgentSystemError } from './errors';
import type { DomainEnvironment, EnvTask, JsonObject, ToolSpec } from './environment';
import type { HarnessManifest, ParseActionOutput, TurnEvent } from './harness-contract';
import { checkToolParams } from './harness-contract';
import type { HarnessRunner, PhaseCall, PhaseResult, ReactPhaseOutput, StartPhaseOutput } from './harness-runner';
import { phaseUsesHooks } from './harness-runner';
import { runPhase } from './harness-phases';
import type { Episode } from './episode';
import { appendMessages, assistantContent, endEpisode, endWithFailure, newEpisode, replaceMessages, taskView, toTrajectory } from './episode';
import { executeAction } from './execute-action';
import { describeTools } from './harness-defaults';
import type { AnswerSpan, AnswerSwap } from './provenance';
import { EpisodeProvenance, extractAnswerSpan, mapStrings, perturbAnswer, sameUpToAnswer, stringLeaves, swapSpan, tagBodies } from './provenance';
import { deriveSeed } from './seeds';
import type { Trajectory } from './trajectory';

/** Sampling and budget settings of a rollout batch (system-owned, not harness-owned). */
export interface RolloutSampling {
  temperature: number; // 1.0 for RSFT rollouts and mean@8
  topK: number; // 20 in the paper; 0 = off
  topP: number; // 1.0 = off
  /** Cap on new tokens per model call. */
  maxNewTokensPerTurn: number;
  /** Cap on generated tokens over a whole episode (the token budget). */
  maxEpisodeTokens: number;
}

export interface RunEpisodesInput<Hidden> {
  backend: ModelBackend;
  environment: DomainEnvironment<Hidden>;
  harness: HarnessRunner;
  tasks: readonly EnvTask<Hidden>[];
  samplesPerTask: number;
  sampling: RolloutSampling;
  /** Seeds derive from (runSeed, step, task id, sample index, turn). */
  runSeed: number;
  step: number;
  /** Called after every turn (e.g. to heartbeat an activity). */
  onTurn?: (progress: { turn: number; live: number; finished: number }) => void;
  /** Where the batch's time goes (ms, added to): pass a fresh `newRolloutTimings()` per batch; absent: not timed. */
  timings?: RolloutTimings;
}

/**
 * A rollout batch's wall time by part (ms). `loopMs` is the rest: the loop's own bookkeeping (budgets,
 * provenance and no-grading checks, default phases without hooks). Timed with `performance.now()` around
 * calls the loop makes anyway, so timing changes no result.
 */
export interface RolloutTimings {
  totalMs: number;
  /** Inside `backend.generate` (the model, including its own stop-string decoding). */
  samplingMs: number;
  /** Harness phase batches sent to the sandbox (IPC round trip and the hooks in the isolate). */
  sandboxMs: number;
  /** The environment's tool calls and submissions (sum of call durations). */
  envToolsMs: number;
  /** Rendering prompts to token ids and decoding generated tokens to text. */
  tokenizeMs: number;
  /** Building the trajectories; the rollout activity adds their JSONL encoding and the artifact write. */
  storageMs: number;
  loopMs: number;
}

export const newRolloutTimings = (): RolloutTimings => ({ totalMs: 0, samplingMs: 0, sandboxMs: 0, envToolsMs: 0, tokenizeMs: 0, storageMs: 0, loopMs: 0 });

/** Awaits `f`, adding its duration to `t[k]` when timing is on. */
async function timed<T>(t: RolloutTimings | undefined, k: keyof RolloutTimings, f: () => Promise<T>): Promise<T> {
  if (!t) return f();
  const t0 = performance.now();
  try {
    return await f();
  } finally {
    t[k] += performance.now() - t0;
  }
}

/** The environment with its tool calls and submissions timed into `t` (the same environment when untimed). */
function timedEnvironment<H>(env: DomainEnvironment<H>, t: RolloutTimings | undefined): DomainEnvironment<H> {
  if (!t) return env;
  // A synchronous tool stays synchronous (no extra await), an asynchronous one is timed until it settles.
  const executeTool: DomainEnvironment<H>['executeTool'] = (...args) => {
    const t0 = performance.now();
    const r = env.executeTool(...args);
    if (!(r instanceof Promise)) return (t.envToolsMs += performance.now() - t0), r;
    return r.finally(() => (t.envToolsMs += performance.now() - t0));
  };
  const submit: DomainEnvironment<H>['submit'] = (...args) => timedSync(t, 'envToolsMs', () => env.submit(...args));
  // A proxy, not a copy: every other member reads from (and methods run on) the environment itself.
  return new Proxy(env, {
    get(target, prop) {
      if (prop === 'executeTool') return executeTool;
      if (prop === 'submit') return submit;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

export interface RunEpisodesResult {
  trajectories: Trajectory[];
  stats: { turns: number; generateCalls: number; harnessBatches: number; modelCalls: number };
}

function checkRolloutInput(input: RunEpisodesInput<unknown>): void {
  const s = input.sampling;
  const problems: string[] = [];
  if (!Number.isInteger(input.samplesPerTask) || input.samplesPerTask < 1) problems.push(`samplesPerTask must be an integer >= 1, got ${input.samplesPerTask}`);
  if (!Number.isInteger(s.maxNewTokensPerTurn) || s.maxNewTokensPerTurn < 1) problems.push(`maxNewTokensPerTurn must be an integer >= 1, got ${s.maxNewTokensPerTurn}`);
  if (!Number.isInteger(s.maxEpisodeTokens) || s.maxEpisodeTokens < 1) problems.push(`maxEpisodeTokens must be an integer >= 1, got ${s.maxEpisodeTokens}`);
  if (!(s.temperature >= 0)) problems.push(`temperature must be >= 0, got ${s.temperature}`);
  if (!Number.isInteger(s.topK) || s.topK < 0) problems.push(`topK must be an integer >= 0 (0 = off), got ${s.topK}`);
  if (!(s.topP > 0 && s.topP <= 1)) problems.push(`topP must be in (0, 1], got ${s.topP}`);
  if (problems.length > 0) throw new AgentConfigError(`invalid rollout settings: ${problems.join('; ')}`);
}

export async function runEpisodes<Hidden>(input: RunEpisodesInput<Hidden>): Promise<RunEpisodesResult> {
  checkRolloutInput(input);
  const t0 = performance.now();
  const batch = new RolloutBatch(input);
  await batch.start();
  while (batch.live().length > 0) {
    const { generating, texts } = await batch.generate();
    if (generating.length === 0) continue;
    const actions = await batch.parse(generating, texts);
    const continuing = await batch.execute(generating, actions, texts);
    await batch.react(continuing);
    input.onTurn?.({ turn: batch.stats.turns, live: batch.live().length, finished: batch.episodes.length - batch.live().length });
  }
  const t = input.timings;
  const trajectories = t ? timedSync(t, 'storageMs', () => batch.trajectories()) : batch.trajectories();
  if (t) {
    const total = performance.now() - t0;
    t.totalMs += total;
    // The rest of this batch's wall time is the loop's own (sampling etc. were added during this batch).
    t.loopMs = t.totalMs - t.samplingMs - t.sandboxMs - t.envToolsMs - t.tokenizeMs - t.storageMs;
  }
  return { trajectories, stats: batch.stats };
}

function timedSync<T>(t: RolloutTimings, k: keyof RolloutTimings, f: () => T): T {
  const t0 = performance.now();
  try {
    return f();
  } finally {
    t[k] += performance.now() - t0;
  }
}

/** One rollout batch in flight: its episodes and the four steps of a turn, each batched. */
class RolloutBatch<Hidden> {
  readonly episodes: Episode<Hidden>[] = [];
  readonly stats = { turns: 0, generateCalls: 0, harnessBatches: 0, modelCalls: 0 };
  private readonly env: DomainEnvironment<Hidden>;
  private readonly manifest: HarnessManifest;
  private readonly tools: ToolSpec[];
  private readonly stopStrings: string[];
  /** Per episode: what its prompts showed and which texts are trusted (the no-injection check). */
  private readonly provenance = new Map<Episode<Hidden>, EpisodeProvenance>();
  /** This turn's answer span per generating episode, and the no-grading comparisons left for `react`. */
  private readonly spans = new Map<Episode<Hidden>, AnswerSpan | null>();
  private readonly swaps = new Map<Episode<Hidden>, AnswerSwap>();

  constructor(private readonly input: RunEpisodesInput<Hidden>) {
    this.env = timedEnvironment(input.environment, input.timings);
    this.manifest = input.harness.manifest;
    this.tools = this.env.tools.map((t) => ({ ...t }));
    this.stopStrings = actionStopStrings(this.tools);
    for (const task of input.tasks) {
      for (let s = 0; s < input.samplesPerTask; s++) this.episodes.push(newEpisode(task, s, this.env.initialState(task), this.manifest));
    }
  }

  live(): Episode<Hidden>[] {
    return this.episodes.filter((ep) => !ep.done);
  }

  /**
   * Runs one phase for a set of episodes: in the harness runner if the harness has hooks for it (one
   * batched call), else with the defaults right here (no IPC). A failure ends just its episode.
   */
  private async phase<O>(eps: Episode<Hidden>[], make: (ep: Episode<Hidden>, index: number) => PhaseCall, pick: (out: PhaseOutputUnion) => O | null): Promise<Array<O | null>> {
    if (eps.length === 0) return [];
    const calls = eps.map(make);
    let results: PhaseResult[];
    if (phaseUsesHooks(calls[0].phase, this.manifest.hooks)) {
      this.stats.harnessBatches++;
      results = await timed(this.input.timings, 'sandboxMs', () => this.input.harness.runPhases(calls));
    } else {
      const noHooks = () => Promise.reject(new AgentSystemError('BUG: a default phase called a harness hook'));
      results = await Promise.all(calls.map((c) => runPhase(this.manifest, noHooks, c)));
    }
    return results.map((r, i) => {
      if (r.ok) return pick(r.output);
      endWithFailure(eps[i], r.failure);
      return null;
    });
  }

  /** Checks tool parameters, then set-up and first messages for every episode (one batched call). */
  async start(): Promise<void> {
    const violations = checkToolParams(this.manifest.config, this.tools);
    if (violations.length > 0) {
      const reason = violations.map((v) => `${v.where}: ${v.message}`).join('; ');
      for (const ep of this.episodes) endWithFailure(ep, { kind: 'contract-violation', reason });
      return;
    }
    const started = await this.phase(
      this.episodes,
      (ep) => ({ phase: 'start', input: { task: taskView(ep.task), observation: this.env.observe(ep.task, ep.envState), tools: this.tools } }),
      (o) => ('messages' in o && !('stop' in o) ? o : null),
    );
    started.forEach((out, i) => {
      if (!out) return;
      this.episodes[i].harnessState = out.state;
      this.episodes[i].messages = out.messages;
      this.episodes[i].messageCalls = out.messages.map(() => null);
    });
  }

  /** One batched generate call for every live episode that still fits its budgets; records the calls. */
  async generate(): Promise<{ generating: Episode<Hidden>[]; texts: string[] }> {
    const { backend, sampling } = this.input;
    const generating: Episode<Hidden>[] = [];
    const requests: GenerateRequest[] = [];
    const t = this.input.timings;
    for (const ep of this.live()) {
      const promptTokens = t ? timedSync(t, 'tokenizeMs', () => renderChatPrompt(ep.messages)) : renderChatPrompt(ep.messages);
      const room = backend.maxContext - promptTokens.length;
      const budget = sampling.maxEpisodeTokens - ep.generatedTokens;
      if (room < 1) endEpisode(ep, 'context-full', `prompt of ${promptTokens.length} tokens leaves no room in a context of ${backend.maxContext}`);
      else if (budget < 1) endEpisode(ep, 'token-budget', `${ep.generatedTokens} tokens generated of ${sampling.maxEpisodeTokens}`);
      else {
        generating.push(ep);
        requests.push({
          promptTokens,
          maxNewTokens: Math.min(sampling.maxNewTokensPerTurn, room, budget),
          temperature: sampling.temperature,
          topK: sampling.topK,
          topP: sampling.topP,
          stopTokens: [SPECIAL_TOKENS.END, SPECIAL_TOKENS.EOT],
          stopStrings: this.stopStrings,
          seed: deriveSeed({ runSeed: this.input.runSeed, step: this.input.step, promptId: ep.task.id, sampleIndex: ep.sampleIndex, turn: ep.turn }),
        });
      }
    }
    if (generating.length === 0) return { generating, texts: [] };
    this.stats.turns++;
    this.stats.generateCalls++;
    const generated = await timed(t, 'samplingMs', () => backend.generate(requests));
    if (generated.length !== requests.length) throw new AgentSystemError(`model backend returned ${generated.length} results for ${requests.length} requests`);
    const texts = generated.map((g, i) => {
      const ep = generating[i];
      const req = requests[i];
      // Kept until the episode ends: `markKeptCalls` decides once the whole conversation history is known.
      ep.modelCalls.push({ turn: ep.turn, seed: req.seed, promptTokens: req.promptTokens, generatedTokens: g.tokens, logprobs: g.logprobs, text: g.text, stopReason: g.stopReason, kept: true, dropReason: null });
      this.stats.modelCalls++;
      ep.promptTokens += req.promptTokens.length;
      ep.generatedTokens += g.tokens.length;
      const content = t ? timedSync(t, 'tokenizeMs', () => assistantContent(g.tokens)) : assistantContent(g.tokens);
      appendMessages(ep, [{ role: 'assistant', content }], ep.modelCalls.length - 1);
      return content;
    });
    return { generating, texts };
  }

  /** Parses every generating episode's action (a batched harness call only if it overrides parsing), then
   * runs the no-grading check on turns whose answer span the harness did not submit. */
  async parse(generating: Episode<Hidden>[], texts: string[]): Promise<Array<ParseActionOutput | null>> {
    const observations = generating.map((ep) => this.env.observe(ep.task, ep.envState));
    const parsed = await this.phase(
      generating,
      (ep, i) => ({
        phase: 'parse',
        input: { task: taskView(ep.task), state: ep.harnessState, turn: ep.turn, text: texts[i], tools: this.tools, observation: observations[i] },
      }),
      (o) => ('action' in o ? o : null),
    );
    await this.checkNoGrading(generating, texts, parsed, observations);
    return parsed;
  }

  /** An episode's provenance record, trusting the harness's literal prompts and the visible task from the start. */
  private provenanceOf(ep: Episode<Hidden>): EpisodeProvenance {
    let p = this.provenance.get(ep);
    if (!p) {
      p = new EpisodeProvenance(ep.task.question, (s) => this.env.normalizeAnswer(s), this.env.answerPattern);
      const c = this.manifest.config;
      p.trust(c.systemPrompt, c.userTemplate, describeTools(this.tools), ...this.tools.map((t) => t.description), ...stringLeaves(ep.task.view));
      this.provenance.set(ep, p);
    }
    return p;
  }

  /**
   * Records what each model call saw and wrote, extracts its answer span, and, where the span holds an
   * answer of the domain's shape that parseAction did not submit, parses the turn again with the span
   * swapped for the alternative (the reference if wrong, a wrong value if right): the two outputs must be
   * equal up to the answer, or the harness graded the answer (a contract violation).
   */
  private async checkNoGrading(generating: Episode<Hidden>[], texts: string[], parsed: Array<ParseActionOutput | null>, observations: JsonObject[]): Promise<void> {
    this.swaps.clear();
    const pending: Array<{ i: number; swap: Omit<AnswerSwap, 'swappedState'> }> = [];
    const pattern = this.env.answerPattern;
    const shaped = pattern ? new RegExp(`^(?:${pattern.source})$`, pattern.flags.replace('g', '')) : null;
    generating.forEach((ep, i) => {
      const evidence = this.provenanceOf(ep);
      evidence.trust(...stringLeaves(observations[i]));
      evidence.saw(ep.messages.slice(0, -1));
      // The turn's own text is trusted only for later prompts (`saw` moved the clock past this one).
      evidence.trust(texts[i], ...tagBodies(texts[i]));
      const span = extractAnswerSpan(texts[i], this.manifest.config.answerForms, pattern);
      this.spans.set(ep, span);
      const out = parsed[i];
      if (!out || !span || out.action.kind === 'answer' || this.env.normalizeAnswer(span.text) === '' || (shaped && !shaped.test(span.text))) return;
      const alternative = this.env.alternativeAnswer?.(ep.task, ep.envState, this.env.normalizeAnswer(span.text)) ?? perturbAnswer(span.text);
      pending.push({ i, swap: { span, alternative, swappedText: swapSpan(texts[i], span, alternative) } });
    });
    if (pending.length === 0) return;
    const eps = pending.map((p) => generating[p.i]);
    const again = this.manifest.hooks.includes('parseAction')
      ? await this.phase(
          eps,
          (ep, j) => ({ phase: 'parse', input: { task: taskView(ep.task), state: ep.harnessState, turn: ep.turn, text: pending[j].swap.swappedText, tools: this.tools, observation: observations[pending[j].i] } }),
          (o) => ('action' in o ? o : null),
        )
      : pending.map((p) => parsed[p.i]);
    const reacts = this.manifest.hooks.includes('feedback') || this.manifest.hooks.includes('shouldStop');
    pending.forEach(({ i, swap }, j) => {
      const ep = generating[i];
      const b = again[j];
      if (!b || !sameUpToAnswer(parsed[i], b, [swap.span.text, swap.alternative])) {
        const detail = ep.done ? ` (it failed: ${ep.stopDetail})` : '';
        endWithFailure(ep, { kind: 'contract-violation', hook: 'parseAction', reason: `parseAction returned something else when the model's answer ${JSON.stringify(swap.span.text.slice(0, 80))} was ${JSON.stringify(swap.alternative.slice(0, 80))}${detail}: a harness may not grade answers` });
        parsed[i] = null;
      } else if (reacts) this.swaps.set(ep, { ...swap, swappedState: b.state });
    });
  }

  /** Executes actions (tools concurrently); returns the episodes that go on, each with its event. */
  async execute(generating: Episode<Hidden>[], actions: Array<ParseActionOutput | null>, texts: string[]): Promise<Array<{ ep: Episode<Hidden>; event: TurnEvent }>> {
    const events = await Promise.all(
      generating.map(async (ep, i) => {
        const parsed = actions[i];
        if (!parsed) return null;
        ep.harnessState = parsed.state;
        const checks = { span: this.spans.get(ep) ?? null, evidence: this.provenanceOf(ep), defaultParser: !this.manifest.hooks.includes('parseAction') };
        return executeAction(ep, parsed.action, texts[i], this.env, this.manifest.config, this.tools, checks);
      }),
    );
    const continuing: Array<{ ep: Episode<Hidden>; event: TurnEvent }> = [];
    generating.forEach((ep, i) => {
      const event = events[i];
      if (ep.done || event === null) return;
      ep.turn++;
      if (ep.turn >= this.manifest.config.maxTurns) endEpisode(ep, 'turn-limit', `${this.manifest.config.maxTurns} turns used`);
      else continuing.push({ ep, event });
    });
    return continuing;
  }

  /** Feedback and the stop rule for the episodes that go on (one batched harness call). */
  async react(continuing: Array<{ ep: Episode<Hidden>; event: TurnEvent }>): Promise<void> {
    const eps = continuing.map((c) => c.ep);
    const reacted = await this.phase(
      eps,
      (ep, i) => ({
        phase: 'react',
        input: { task: taskView(ep.task), state: ep.harnessState, turn: ep.turn - 1, event: continuing[i].event, messages: ep.messages, tools: this.tools, observation: this.env.observe(ep.task, ep.envState) },
      }),
      (o) => ('stop' in o ? o : null),
    );
    await this.checkSwappedReactions(continuing, reacted);
    reacted.forEach((out, i) => {
      const ep = eps[i];
      if (!out) return;
      ep.harnessState = out.state;
      const prev = ep.messages;
      const next = out.messages;
      const appended = next.length >= prev.length && prev.every((m, j) => m.role === next[j].role && m.content === next[j].content);
      ep.turns[ep.turns.length - 1].feedback = appended ? next.slice(prev.length) : next;
      if (appended) appendMessages(ep, next.slice(prev.length));
      else replaceMessages(ep, next);
      if (out.stop.stop) endEpisode(ep, 'stop-rule', out.stop.reason ?? 'the harness stop rule fired');
    });
  }

  /**
   * The no-grading check's second half: feedback and the stop rule must also react the same way (up to the
   * answer) when the turn's answer span held the alternative answer. A violator's reaction is discarded.
   */
  private async checkSwappedReactions(continuing: Array<{ ep: Episode<Hidden>; event: TurnEvent }>, reacted: Array<ReactPhaseOutput | null>): Promise<void> {
    const idx = continuing.map((c, i) => (this.swaps.has(c.ep) && reacted[i] ? i : -1)).filter((i) => i >= 0);
    if (idx.length === 0) return;
    const eps = idx.map((i) => continuing[i].ep);
    const again = await this.phase(
      eps,
      (ep, j) => {
        const swap = this.swaps.get(ep)!;
        const swapped = (s: string) => s.split(swap.span.text).join(swap.alternative);
        const messages = ep.messages.map((m, k) => (k === ep.messages.length - 1 && m.role === 'assistant' ? { ...m, content: swap.swappedText } : m));
        const event = mapStrings(continuing[idx[j]].event, swapped);
        return { phase: 'react', input: { task: taskView(ep.task), state: swap.swappedState, turn: ep.turn - 1, event, messages, tools: this.tools, observation: this.env.observe(ep.task, ep.envState) } };
      },
      (o) => ('stop' in o ? o : null),
    );
    idx.forEach((i, j) => {
      const ep = eps[j];
      const swap = this.swaps.get(ep)!;
      const b = again[j];
      if (b && sameUpToAnswer(reacted[i], b, [swap.span.text, swap.alternative])) return;
      const detail = ep.done ? ` (it failed: ${ep.stopDetail})` : '';
      endWithFailure(ep, { kind: 'contract-violation', hook: 'feedback', reason: `feedback or shouldStop reacted differently when the model's answer ${JSON.stringify(swap.span.text.slice(0, 80))} was ${JSON.stringify(swap.alternative.slice(0, 80))}${detail}: a harness may not grade answers` });
      reacted[i] = null;
    });
  }

  trajectories(): Trajectory[] {
    const ctx = { runSeed: this.input.runSeed, step: this.input.step, manifest: this.manifest };
    return this.episodes.map((ep) => toTrajectory(ep, this.env, ctx));
  }
}

type PhaseOutputUnion = StartPhaseOutput | ParseActionOutput | ReactPhaseOutput;
