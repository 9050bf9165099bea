// The agent loop, owned by the system: runs a batch of episodes (tasks x samples) turn by turn. Each turn
// sends every live episode's prompt to the model backend as one batched `generate` call, parses actions
// (one batched harness call if the harness overrides parsing), executes tools and submissions in the
// environment, and asks the harness for feedback and its stop rule (one batched call). Finished episodes
// drop out. Training rollouts, harness scoring and test evaluation all run through here.

import { AgentConfigError, AgentSystemError } from './errors';
import type { GenerateRequest, ModelBackend } from '../model/backend';
import { SPECIAL_TOKENS, renderChatPrompt } from '../model/tokenizer';
import { actionStopStrings } from './actions';
import type { DomainEnvironment, EnvTask, ToolSpec } from './environment';
import type { TurnEvent } from './harness-contract';
import { checkToolParams } from './harness-contract';
import type { HarnessRunner, PhaseCall, PhaseResult } from './harness-runner';
import { phaseUsesHooks } from './harness-runner';
import { runPhase } from './harness-phases';
import type { Episode } from './episode';
import { assistantContent, endEpisode, endWithFailure, newEpisode, taskView, toTrajectory } from './episode';
import { executeAction } from './execute-action';
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
  const { backend, environment: env, harness, sampling } = input;
  const manifest = harness.manifest;
  const tools: ToolSpec[] = env.tools.map((t) => ({ ...t }));
  const stats = { turns: 0, generateCalls: 0, harnessBatches: 0, modelCalls: 0 };
  const episodes: Episode<Hidden>[] = [];
  for (const task of input.tasks) {
    for (let s = 0; s < input.samplesPerTask; s++) episodes.push(newEpisode(task, s, env.initialState(task), manifest));
  }

  // Runs one phase for a set of episodes: in the harness runner if the harness has hooks for it (one
  // batched call), else with the defaults right here (no IPC). Failures end just their episode.
  const phase = async (eps: Episode<Hidden>[], make: (ep: Episode<Hidden>, index: number) => PhaseCall): Promise<Array<PhaseResult | null>> => {
    if (eps.length === 0) return [];
    const calls = eps.map(make);
    let results: PhaseResult[];
    if (phaseUsesHooks(calls[0].phase, manifest.hooks)) {
      stats.harnessBatches++;
      results = await harness.runPhases(calls);
    } else {
      const noHooks = () => Promise.reject(new AgentSystemError('BUG: a default phase called a harness hook'));
      results = await Promise.all(calls.map((c) => runPhase(manifest, noHooks, c)));
    }
    return results.map((r, i) => {
      if (r.ok) return r;
      endWithFailure(eps[i], r.failure);
      return null;
    });
  };

  const violations = checkToolParams(manifest.config, tools);
  if (violations.length > 0) {
    const reason = violations.map((v) => `${v.where}: ${v.message}`).join('; ');
    for (const ep of episodes) endWithFailure(ep, { kind: 'contract-violation', reason });
  }

  const starting = episodes.filter((ep) => !ep.done);
  const started = await phase(starting, (ep) => ({
    phase: 'start',
    input: { task: taskView(ep.task), observation: env.observe(ep.task, ep.envState), tools },
  }));
  started.forEach((r, i) => {
    if (r?.ok && 'messages' in r.output) {
      starting[i].harnessState = r.output.state;
      starting[i].messages = r.output.messages;
    }
  });

  const stopStrings = actionStopStrings(tools);
  for (;;) {
    const live = episodes.filter((ep) => !ep.done);
    if (live.length === 0) break;

    // 1. One batched generate call for every live episode that still fits its budgets.
    const generating: Episode<Hidden>[] = [];
    const requests: GenerateRequest[] = [];
    for (const ep of live) {
      const promptTokens = renderChatPrompt(ep.messages);
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
          stopStrings,
          seed: deriveSeed({ runSeed: input.runSeed, step: input.step, promptId: ep.task.id, sampleIndex: ep.sampleIndex, turn: ep.turn }),
        });
      }
    }
    if (generating.length === 0) continue;
    stats.turns++;
    stats.generateCalls++;
    const generated = await backend.generate(requests);
    if (generated.length !== requests.length) throw new AgentSystemError(`model backend returned ${generated.length} results for ${requests.length} requests`);
    const texts = generated.map((g, i) => {
      const ep = generating[i];
      const req = requests[i];
      ep.modelCalls.push({ turn: ep.turn, seed: req.seed, promptTokens: req.promptTokens, generatedTokens: g.tokens, logprobs: g.logprobs, text: g.text, stopReason: g.stopReason });
      stats.modelCalls++;
      ep.promptTokens += req.promptTokens.length;
      ep.generatedTokens += g.tokens.length;
      const content = assistantContent(g.tokens);
      ep.messages = [...ep.messages, { role: 'assistant', content }];
      return content;
    });

    // 2. Parse actions (batched harness call only if the harness overrides parsing).
    const parsed = await phase(generating, (ep, i) => ({
      phase: 'parse',
      input: { task: taskView(ep.task), state: ep.harnessState, turn: ep.turn, text: texts[i], tools, observation: env.observe(ep.task, ep.envState) },
    }));

    // 3. Execute in the environment: tool calls concurrently, submissions, retry budgets, provenance.
    const reacting: Episode<Hidden>[] = [];
    const reactingEvents: TurnEvent[] = [];
    const events = await Promise.all(
      generating.map(async (ep, i) => {
        const r = parsed[i];
        if (!r?.ok || !('action' in r.output)) return null;
        ep.harnessState = r.output.state;
        return executeAction(ep, r.output.action, texts[i], env, manifest.config, tools);
      }),
    );
    generating.forEach((ep, i) => {
      const event = events[i];
      if (ep.done || event === null) return;
      ep.turn++;
      if (ep.turn >= manifest.config.maxTurns) endEpisode(ep, 'turn-limit', `${manifest.config.maxTurns} turns used`);
      else {
        reacting.push(ep);
        reactingEvents.push(event);
      }
    });

    // 4. Feedback and stop rule for the episodes that go on (one batched harness call).
    const reacted = await phase(reacting, (ep, i) => ({
      phase: 'react',
      input: {
        task: taskView(ep.task),
        state: ep.harnessState,
        turn: ep.turn - 1,
        event: reactingEvents[i],
        messages: ep.messages,
        tools,
        observation: env.observe(ep.task, ep.envState),
      },
    }));
    reacted.forEach((r, i) => {
      const ep = reacting[i];
      if (!r?.ok || !('stop' in r.output)) return;
      ep.harnessState = r.output.state;
      const prev = ep.messages;
      const next = r.output.messages;
      const appended = next.length >= prev.length && prev.every((m, j) => m.role === next[j].role && m.content === next[j].content);
      ep.turns[ep.turns.length - 1].feedback = appended ? next.slice(prev.length) : next;
      ep.messages = next;
      if (r.output.stop.stop) endEpisode(ep, 'stop-rule', r.output.stop.reason ?? 'the harness stop rule fired');
    });
    input.onTurn?.({ turn: stats.turns, live: episodes.filter((e) => !e.done).length, finished: episodes.filter((e) => e.done).length });
  }

  const ctx = { runSeed: input.runSeed, step: input.step, manifest };
  return { trajectories: episodes.map((ep) => toTrajectory(ep, env, ctx)), stats };
}
