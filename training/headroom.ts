// Measurements behind the headroom report (scripts/headroom-report.ts): mean@8 of a checkpoint under a
// harness on D_test, and an RSFT run under h0 by the paper's recipe (docs/method.md, "Weight phase"),
// trained with the same runSftEpoch as fine-tune steps and pretraining. Everything is seeded by the run seed.
import { runEpisodes, type RolloutSampling } from '../agent/loop';
import type { Trajectory } from '../agent/trajectory';
import type { DomainInstance, EnvTask } from '../domains/types';
import { loadHarnessInProcess } from '../harness-sandbox/in-process';
import { OrtSampler, Trainer, type Checkpoint, type StepHyperparams } from '../model';
import { ROLLOUT_LIMITS } from './corpus';
import { TEST_EVAL_STEP } from './eval-tags';
import { acceptedExamples, planMinibatches, runSftEpoch } from './rsft';

export const ROLLOUT_SAMPLING: RolloutSampling = { temperature: 1, topK: 20, topP: 1, ...ROLLOUT_LIMITS };

export interface EvalResult {
  meanAt8: number;
  /** Fraction of tasks with at least one correct sample. */
  passAt8: number;
  /** Fraction of episodes with at least one tool call. */
  toolRate: number;
  /** Accuracy of the episodes that called a tool. */
  toolAccuracy: number | null;
  /** Fraction of episodes that submitted an answer. */
  answerRate: number;
  episodes: number;
  seconds: number;
}

function loadTrusted(source: string) {
  const r = loadHarnessInProcess(source);
  if (!r.ok) throw new Error(`harness invalid: ${r.violations.map((v) => `${v.where}: ${v.message}`).join('; ')}`);
  return r.runner;
}

export async function rollout(ck: Pick<Checkpoint, 'config' | 'params'>, instance: DomainInstance, harnessSource: string, tasks: readonly EnvTask<unknown>[], samplesPerTask: number, runSeed: number, step: number): Promise<Trajectory[]> {
  const backend = await OrtSampler.fromCheckpoint(ck, { maxBatchRows: 128 });
  try {
    const r = await runEpisodes({ backend, environment: instance.environment, harness: loadTrusted(harnessSource), tasks, samplesPerTask, sampling: ROLLOUT_SAMPLING, runSeed, step });
    return r.trajectories;
  } finally {
    await backend.close();
  }
}

export function summarizeEval(trajectories: readonly Trajectory[], seconds: number): EvalResult {
  const byTask = new Map<string, number[]>();
  for (const t of trajectories) {
    const list = byTask.get(t.taskId);
    if (list) list.push(t.reward);
    else byTask.set(t.taskId, [t.reward]);
  }
  const perTask = [...byTask.values()];
  const tool = trajectories.filter((t) => t.turns.some((u) => u.tool !== undefined));
  return {
    meanAt8: perTask.reduce((a, rs) => a + rs.reduce((x, y) => x + y, 0) / rs.length, 0) / Math.max(1, perTask.length),
    passAt8: perTask.filter((rs) => rs.some((r) => r === 1)).length / Math.max(1, perTask.length),
    toolRate: tool.length / Math.max(1, trajectories.length),
    toolAccuracy: tool.length ? tool.filter((t) => t.reward === 1).length / tool.length : null,
    answerRate: trajectories.filter((t) => t.stopReason === 'answer').length / Math.max(1, trajectories.length),
    episodes: trajectories.length,
    seconds,
  };
}

/** mean@8 on the given test tasks: 8 samples per task at T = 1, top-k 20. */
export async function evaluateMeanAt8(ck: Pick<Checkpoint, 'config' | 'params'>, instance: DomainInstance, harnessSource: string, tasks: readonly EnvTask<unknown>[], runSeed: number): Promise<EvalResult> {
  const t0 = Date.now();
  const ts = await rollout(ck, instance, harnessSource, tasks, 8, runSeed, TEST_EVAL_STEP);
  return summarizeEval(ts, (Date.now() - t0) / 1000);
}

export interface RsftOptions {
  seed: number;
  steps: number;
  promptsPerStep: number;
  samplesPerPrompt: number;
  acceptThreshold: number;
  minibatchSize: number;
  hyper: StepHyperparams;
  /** Evaluate mean@8 on the test tasks before step 0 and after every `evalEvery` steps (and the last). */
  evalEvery: number;
  onLog?: (line: string) => void;
}

export interface RsftStepLog {
  step: number;
  meanReward: number;
  accepted: number;
  distinctPrompts: number;
  loss: number | null;
  seconds: number;
}

export interface RsftRun {
  seed: number;
  evals: Array<{ step: number; result: EvalResult }>;
  steps: RsftStepLog[];
}

/** RSFT under one harness from a base checkpoint with a fresh AdamW; prompts from a seeded pass over D_weight. */
export async function runRsft(base: Checkpoint, instance: DomainInstance, harnessSource: string, testTasks: readonly EnvTask<unknown>[], o: RsftOptions): Promise<RsftRun> {
  const total = base.params.length;
  const trainer = Trainer.fromState({ config: base.config, params: base.params, adamM: new Float32Array(total), adamV: new Float32Array(total), step: 0 });
  const run: RsftRun = { seed: o.seed, evals: [], steps: [] };
  const weight = instance.splits.weight;
  const epochBatches = (epoch: number) => planMinibatches(weight, o.promptsPerStep, o.seed, epoch).filter((b) => b.length === o.promptsPerStep);
  let batches = epochBatches(0);
  try {
    let params = base.params;
    const evalNow = async (step: number) => {
      const result = await evaluateMeanAt8({ config: base.config, params }, instance, harnessSource, testTasks, o.seed);
      run.evals.push({ step, result });
      o.onLog?.(`[rsft seed ${o.seed}] step ${step}: mean@8 ${(100 * result.meanAt8).toFixed(1)}% tool ${(100 * result.toolRate).toFixed(0)}% (${result.seconds.toFixed(0)}s)`);
    };
    await evalNow(0);
    for (let step = 0; step < o.steps; step++) {
      const t0 = Date.now();
      const epoch = Math.floor(step / batches.length);
      if (step % batches.length === 0 && step > 0) batches = epochBatches(epoch);
      const prompts = batches[step % batches.length];
      const ts = await rollout({ config: base.config, params }, instance, harnessSource, prompts, o.samplesPerPrompt, o.seed, step);
      const examples = acceptedExamples(ts, o.acceptThreshold);
      let loss: number | null = null;
      if (examples.length > 0) {
        loss = (await runSftEpoch(trainer, examples, { minibatchSize: o.minibatchSize, hyper: o.hyper, seed: o.seed, step })).meanLoss;
        params = (await trainer.state()).params;
      }
      const accepted = ts.filter((t) => t.reward > o.acceptThreshold);
      const log: RsftStepLog = {
        step: step + 1, meanReward: ts.reduce((a, t) => a + t.reward, 0) / ts.length, accepted: accepted.length,
        distinctPrompts: new Set(accepted.map((t) => t.taskId)).size, loss, seconds: (Date.now() - t0) / 1000,
      };
      run.steps.push(log);
      o.onLog?.(`[rsft seed ${o.seed}] step ${log.step}: reward ${log.meanReward.toFixed(3)} accepted ${log.accepted} (${log.distinctPrompts} prompts) loss ${log.loss?.toFixed(4) ?? '-'} ${log.seconds.toFixed(1)}s`);
      if ((step + 1) % o.evalEvery === 0 || step + 1 === o.steps) await evalNow(step + 1);
    }
    return run;
  } finally {
    await trainer.close();
  }
}
