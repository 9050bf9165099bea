// The model worker's activities: preparing a run, rollout batches, fine-tune steps, test evaluation and
// harness scoring. Built by a factory closed over its dependencies (store, sampler and fine-tune backends,
// loaded harnesses, domains, base policies), so tests pass small real ones. Every rollout goes through the
// one agent loop.
import { Context } from '@temporalio/activity';
import { atActivityBoundary, configError, throwIfCancelled, withHeartbeatTimer } from './activity-context';
import type { ArtifactStore } from '../store/artifact-store';
import type { ArtifactRef } from '../store/artifact-ref';
import { trajectoriesFromJsonl, trajectoriesToJsonl, type Trajectory } from '../agent/trajectory';
import { newRolloutTimings, runEpisodes, type RolloutSampling, type RolloutTimings } from '../agent/loop';
import type { EnvTask } from '../agent/environment';
import type { DomainInstance } from '../domains/types';
import type {
  EvaluateHarnessInput, EvaluateHarnessResult, EvaluateTestInput, EvaluateTestResult, FineTuneStepInput, FineTuneStepResult,
  PrepareRunInput, PrepareRunResult, RolloutBatchInput, RolloutBatchResult, WhaleActivities,
} from './types';
import type { FineTuneBackend, SamplerBackend } from './model-backends';
import type { HarnessLoader } from './harness-loader';
import { seededPermutation } from '../training/rsft';
import { TEST_EVAL_STEP } from '../training/eval-tags';
import { openArchive, recordCandidateEvaluation } from './archive';

export interface ModelActivityDeps {
  store: ArtifactStore;
  /** Where rollouts generate (embedded onnxruntime, or an OpenAI-compatible server). */
  sampler: SamplerBackend;
  /** Where fine-tune steps train (embedded onnxruntime, or an external trainer). */
  trainer: FineTuneBackend;
  /** Harness runners loaded into the sandbox. */
  harnesses: HarnessLoader;
  /** The domain instance for a run config's domain name (throws a clear error for unknown names). */
  domain(name: string): DomainInstance;
  /** The domain's base policy checkpoint bytes (committed, or from `whale pretrain`). */
  basePolicy(domain: string): Uint8Array;
  /** The domain's seed harness h0 (TypeScript source). */
  seedHarness(domain: string): string;
  /** System-owned limits of one rollout (not harness-owned). */
  limits: { maxNewTokensPerTurn: number; maxEpisodeTokens: number };
  /** Root of the harness archives (browsable files): scored candidates and their D_harness traces go there. */
  archiveRoot?: string;
  /** Told where each rollout batch's time went (`whale bench runtime`); each batch has its own accumulator. */
  onRolloutTimings?: (label: string, timings: RolloutTimings) => void;
}

/** Test evaluations use a fixed step tag, so equal (checkpoint, harness) pairs draw equal samples. */
export { TEST_EVAL_STEP };
/** Sampling of test evaluations (and of an exported agent bundle, which reproduces them). */
export const TEST_SAMPLING = { temperature: 1.0, topK: 20 } as const;
const HARNESS_EVAL_STEP = 0x4a55;
/** What an evaluateHarness input without `sampling` (scheduled before the run config set it) was scored with. */
const HARNESS_SAMPLING_BEFORE_CONFIG = { temperature: 1.0, topK: 20 } as const;




export function createModelActivities(deps: ModelActivityDeps): Pick<WhaleActivities, 'prepareRun' | 'rolloutBatch' | 'fineTuneStep' | 'evaluateTest' | 'evaluateHarness'> {
  const domainOf = (name: string): DomainInstance => {
    try {
      return deps.domain(name);
    } catch (err) {
      return configError((err as Error).message);
    }
  };

  async function rollouts(opts: {
    domain: string; checkpoint: ArtifactRef; harness: ArtifactRef; tasks: readonly EnvTask<unknown>[]; samplesPerTask: number;
    sampling: { temperature: number; topK: number }; runSeed: number; step: number; label: string; timings?: RolloutTimings;
  }): Promise<Trajectory[]> {
    const total = opts.tasks.length * opts.samplesPerTask;
    // The timer beats from the start: loading a sampler or a harness can itself outlast a heartbeat timeout.
    return withHeartbeatTimer(async (beat) => {
      const instance = domainOf(opts.domain);
      const backend = await deps.sampler.samplerFor(opts.checkpoint);
      const harness = await deps.harnesses.load(opts.harness);
      const sampling: RolloutSampling = { temperature: opts.sampling.temperature, topK: opts.sampling.topK, topP: 1, ...deps.limits };
      const { trajectories } = await runEpisodes({
        backend, environment: instance.environment, harness, tasks: opts.tasks, samplesPerTask: opts.samplesPerTask,
        sampling, runSeed: opts.runSeed, step: opts.step, timings: opts.timings,
        onTurn: (p) => {
          throwIfCancelled();
          beat({ phase: opts.label, turn: p.turn, finished: p.finished, total });
        },
      });
      return trajectories;
    }, { phase: opts.label, turn: 0, finished: 0, total });
  }

  // Every model activity throws through the one boundary: failures Temporal retries only for system faults.
  return atActivityBoundary({
    async prepareRun(input: PrepareRunInput): Promise<PrepareRunResult> {
      const instance = domainOf(input.domain);
      let checkpoint = input.baseCheckpoint;
      if (checkpoint) {
        if (!(await deps.store.has(checkpoint))) configError(`model.baseCheckpoint ${checkpoint.uri} is not in the artifact store: put it there (whale import <folder> --store <artifact dir>; --pointer for a served Hugging Face model) or omit it to start from the domain's base policy`);
        // A truncated or foreign file fails the run here, at once, instead of every later rollout.
        const problem = await deps.sampler.baseCheckpointProblem(checkpoint, `model.baseCheckpoint ${checkpoint.uri}`);
        if (problem) configError(problem);
      } else {
        let bytes: Uint8Array;
        try {
          bytes = deps.basePolicy(input.domain);
        } catch (err) {
          return configError((err as Error).message);
        }
        checkpoint = await deps.store.put('checkpoint', bytes);
      }
      let harness = input.baseHarness;
      if (harness) {
        if (!(await deps.store.has(harness))) configError(`model.baseHarness ${harness.uri} is not in the artifact store`);
      } else {
        harness = await deps.store.put('harness', deps.seedHarness(input.domain));
      }
      const s = instance.splits;
      return { checkpoint, harness, splitSizes: { weight: s.weight.length, harness: s.harness.length, test: s.test.length } };
    },

    async rolloutBatch(input: RolloutBatchInput): Promise<RolloutBatchResult> {
      const instance = domainOf(input.domain);
      const tasks = sampleWeightPrompts(weightSubset(instance.splits.weight, input.taskLimit, input.seed), input.cursor, input.prompts, input.seed);
      const label = `rollouts step ${input.step}`;
      const timings = deps.onRolloutTimings ? newRolloutTimings() : undefined;
      const trajectories = await rollouts({
        domain: input.domain, checkpoint: input.checkpoint, harness: input.harness, tasks, samplesPerTask: input.samplesPerPrompt,
        sampling: input.sampling, runSeed: input.seed, step: input.step, label, timings,
      });
      const t0 = performance.now();
      const ref = await deps.store.put('trajectories', trajectoriesToJsonl(trajectories));
      if (timings) {
        const ms = performance.now() - t0;
        timings.storageMs += ms;
        timings.totalMs += ms;
        deps.onRolloutTimings?.(label, timings);
      }
      const signal = patienceSignal(trajectories);
      const accepted = trajectories.filter((t) => t.reward > input.acceptThreshold);
      return {
        trajectories: ref,
        promptIds: tasks.map((t) => t.id),
        rollouts: trajectories.length,
        scored: signal.scored,
        meanReward: signal.meanReward,
        accepted: accepted.length,
        distinctAcceptedPrompts: new Set(accepted.map((t) => t.taskId)).size,
        tokens: trajectories.reduce((a, t) => a + t.tokenCounts.generated, 0),
        meanTurns: trajectories.length ? trajectories.reduce((a, t) => a + t.turns.length, 0) / trajectories.length : 0,
      };
    },

    async fineTuneStep(input: FineTuneStepInput): Promise<FineTuneStepResult> {
      const resumeFrom = resumeDetails();
      // Until the step beats itself (loading the trainer takes a while) the timer re-sends the previous
      // attempt's resume point, or plain progress 0 on a first attempt.
      return withHeartbeatTimer((beat) => deps.trainer.fineTuneStep(input, { heartbeat: beat, throwIfCancelled, resumeFrom }), resumeFrom ?? { kind: 'fine-tune-progress', progress: 0 });
    },

    async evaluateTest(input: EvaluateTestInput): Promise<EvaluateTestResult> {
      const instance = domainOf(input.domain);
      const tasks = input.taskLimit ? instance.splits.test.slice(0, input.taskLimit) : instance.splits.test;
      const trajectories = await rollouts({
        domain: input.domain, checkpoint: input.checkpoint, harness: input.harness, tasks, samplesPerTask: input.samplesPerTask,
        sampling: TEST_SAMPLING, runSeed: input.seed, step: TEST_EVAL_STEP, label: `test ${input.label}`,
      });
      const perTask = new Map<string, number[]>();
      for (const t of trajectories) perTask.set(t.taskId, [...(perTask.get(t.taskId) ?? []), t.reward]);
      // Final answers per sample too: an exported agent bundle is checked against them (docs/agent-bundle.md).
      const answers = new Map<string, (string | null)[]>();
      for (const t of trajectories) answers.set(t.taskId, [...(answers.get(t.taskId) ?? []), t.finalAnswer]);
      const taskMeans = [...perTask.entries()].map(([taskId, r]) => ({ taskId, mean: r.reduce((a, b) => a + b, 0) / r.length, rewards: r, answers: answers.get(taskId) ?? [] }));
      const meanAt8 = taskMeans.length ? taskMeans.reduce((a, t) => a + t.mean, 0) / taskMeans.length : 0;
      const detail = await deps.store.put('evaluation', JSON.stringify({ label: input.label, checkpoint: input.checkpoint.sha256, harness: input.harness.sha256, meanAt8, tasks: taskMeans }));
      return { meanAt8, tasks: taskMeans.length, rollouts: trajectories.length, detail };
    },

    async evaluateHarness(input: EvaluateHarnessInput): Promise<EvaluateHarnessResult> {
      const instance = domainOf(input.domain);
      const tasks = input.taskLimit ? instance.splits.harness.slice(0, input.taskLimit) : instance.splits.harness;
      const trajectories = await rollouts({
        domain: input.domain, checkpoint: input.checkpoint, harness: input.harness, tasks, samplesPerTask: input.rolloutsPerTask,
        sampling: input.sampling ?? HARNESS_SAMPLING_BEFORE_CONFIG, runSeed: input.seed, step: HARNESS_EVAL_STEP, label: `harness ${input.name}`,
      });
      const jsonl = trajectoriesToJsonl(trajectories);
      const ref = await deps.store.put('trajectories', jsonl);
      const n = Math.max(1, trajectories.length);
      const result = {
        successRate: trajectories.reduce((a, t) => a + t.reward, 0) / n,
        meanTurns: trajectories.reduce((a, t) => a + t.turns.length, 0) / n,
        meanTokens: trajectories.reduce((a, t) => a + t.tokenCounts.generated, 0) / n,
        rollouts: trajectories.length,
        trajectories: ref,
      };
      if (deps.archiveRoot) {
        // The proposer reads scores and full D_harness traces from the archive (never D_test's).
        const source = (await deps.store.get(input.harness)).toString('utf8');
        await recordCandidateEvaluation(openArchive(deps.archiveRoot, input.archiveKey), input.name, { ...result, trajectoriesJsonl: jsonl, source });
      }
      return result;
    },
  });
}

/**
 * The weight-patience signal of a rollout batch: the mean reward over ALL its rollouts, a harness failure
 * counting 0 (the paper averages the score over every rollout; the harness is part of the agent being
 * trained). Only a batch where every rollout was a harness failure has no signal (null): it measured nothing
 * about the weights, and the patience rule treats it as missing (docs/method.md, "Missing signal").
 */
export function patienceSignal(trajectories: readonly Pick<Trajectory, 'stopReason' | 'reward'>[]): { scored: number; meanReward: number | null } {
  const scored = trajectories.filter((t) => t.stopReason !== 'harness-failure').length;
  if (scored === 0) return { scored, meanReward: null };
  return { scored, meanReward: trajectories.reduce((a, t) => a + t.reward, 0) / trajectories.length };
}

function resumeDetails(): unknown {
  try {
    return Context.current().info.heartbeatDetails;
  } catch {
    return undefined;
  }
}

/**
 * weight.taskLimit: the run's D_weight, `limit` prompts picked by a seeded permutation (its own stream, apart from
 * the epoch permutations) and kept in the domain's order; the same subset at every step. No limit: all of it.
 */
export function weightSubset<T>(weight: readonly T[], limit: number | undefined, seed: number): readonly T[] {
  if (limit === undefined || limit >= weight.length) return weight;
  const picked = seededPermutation(weight.length, seed, WEIGHT_SUBSET_STREAM).slice(0, limit).sort((a, b) => a - b);
  return picked.map((i) => weight[i]);
}
/** The permutation stream of the subset: an epoch number the sampler never reaches. */
const WEIGHT_SUBSET_STREAM = -1;

/**
 * The persistent sampler over D_weight: epoch e visits a permutation seeded by (run seed, e); a batch
 * that crosses the end of an epoch continues in the next epoch's permutation.
 */
export function sampleWeightPrompts<T>(weight: readonly T[], cursor: { epoch: number; offset: number }, count: number, seed: number): T[] {
  if (weight.length === 0) configError('D_weight is empty: the domain has no training prompts');
  const out: T[] = [];
  let { epoch, offset } = cursor;
  let perm = seededPermutation(weight.length, seed, epoch);
  while (out.length < count) {
    if (offset >= weight.length) {
      epoch += 1;
      offset = 0;
      perm = seededPermutation(weight.length, seed, epoch);
    }
    out.push(weight[perm[offset]]);
    offset += 1;
  }
  return out;
}

export { trajectoriesFromJsonl };
