// The SFT half of an online RSFT step (docs/method.md, "Weight phase"): accepted trajectories become
// per-kept-model-call examples (prompt weight 0, generated weight 1), shuffled by a seed derived from the run
// seed and step, cut into minibatches and trained for one epoch. A minibatch is N trajectories (every kept
// call of each, one AdamW update over fixed micro-batches, loss normalised by the minibatch's trained tokens)
// or, for runs recorded before that unit existed, N model calls. Used by the fineTuneStep activity, the
// external trainer, the headroom report and pretraining alike, so all of them train the same way.
import { trainingExamplesFromTrajectories, type TrainingExample, type Trajectory } from '../agent/trajectory';
import type { StepHyperparams, TrainBatch, Trainer } from '../model';
import { Rng } from '../common/rng';

/** What `minibatchSize` counts: accepted trajectories (the paper's unit) or model calls (runs before it). */
export type MinibatchUnit = 'calls' | 'trajectories';
export const MINIBATCH_UNITS: readonly MinibatchUnit[] = ['calls', 'trajectories'];

/**
 * Rows per micro-batch of a trajectory minibatch. Fixed, so the trainer keeps few session shapes and memory
 * stays at one micro-batch whatever the trajectories' turn counts; it does not change the update's value.
 */
export const MICRO_BATCH_ROWS = 16;

export interface SftEpochOptions {
  minibatchSize: number;
  /** Default 'calls'. */
  unit?: MinibatchUnit;
  hyper: StepHyperparams;
  /** Order of examples: a permutation seeded by (seed, step), so a resumed epoch sees the same minibatches. */
  seed: number;
  step: number;
  /** Resume: skip the minibatches a previous attempt already trained (their effect is in the trainer's state). */
  startMinibatch?: number;
  /** Called after each minibatch (heartbeats, partial checkpoints); awaited before the next one. */
  onMinibatch?: (done: number, total: number, loss: number) => Promise<void>;
}

export interface SftEpochResult {
  minibatches: number;
  trainedMinibatches: number;
  meanLoss: number | null;
  tokens: number;
}

/** Mixes (seed, step) into one 32-bit seed. */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h ^= p >>> 0;
    h = Math.imul(h, 0x01000193) >>> 0;
    h ^= h >>> 13;
  }
  return h >>> 0;
}

/** A permutation of 0..n-1 seeded by (seed, epoch): the persistent prompt sampler's order for one epoch. */
export function seededPermutation(n: number, seed: number, epoch: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  const rng = new Rng(mixSeed(seed, epoch, 0xe90c));
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

/** Deterministic minibatches: a seeded shuffle, then consecutive slices of `size` (the last may be short). */
export function planMinibatches<T>(items: readonly T[], size: number, seed: number, step: number): T[][] {
  if (!Number.isInteger(size) || size < 1) throw new Error(`minibatch size must be a positive integer, got ${size}`);
  const order = seededPermutation(items.length, seed, mixSeed(step, 0x5f7));
  const out: T[][] = [];
  for (let i = 0; i < order.length; i += size) out.push(order.slice(i, i + size).map((k) => items[k]));
  return out;
}

/** Examples of accepted trajectories (reward > threshold), one per model call. */
export function acceptedExamples(trajectories: readonly Trajectory[], acceptThreshold: number): TrainingExample[] {
  return trainingExamplesFromTrajectories(trajectories, { minReward: acceptThreshold });
}

/** Examples grouped by trajectory, in order of first appearance (calls keep their order inside a group). */
export function groupByTrajectory(examples: readonly TrainingExample[]): TrainingExample[][] {
  const groups = new Map<string, TrainingExample[]>();
  for (const e of examples) {
    const g = groups.get(e.trajectoryId);
    if (g) g.push(e);
    else groups.set(e.trajectoryId, [e]);
  }
  return [...groups.values()];
}

/** Rows padded with all-zero-weight rows to `rows` (static shapes; padding contributes no gradient). */
function toBatch(examples: readonly TrainingExample[], rows: number): TrainBatch {
  const tokens = examples.map((e) => Int32Array.from(e.tokens));
  const lossWeights = examples.map((e) => Float32Array.from(e.weights));
  while (tokens.length < rows) {
    tokens.push(Int32Array.from([0, 0]));
    lossWeights.push(Float32Array.from([0, 0]));
  }
  return { tokens, lossWeights };
}

/**
 * The optimizer updates of one epoch: per update, its micro-batches. Unit 'calls': consecutive slices of
 * `minibatchSize` shuffled examples, one batch each. Unit 'trajectories': slices of `minibatchSize`
 * shuffled trajectories; their examples, sorted by length (less padding per micro-batch; the sum does not
 * depend on the order), in micro-batches of MICRO_BATCH_ROWS rows.
 */
export function planUpdates(examples: readonly TrainingExample[], opts: Pick<SftEpochOptions, 'minibatchSize' | 'unit' | 'seed' | 'step'>): TrainingExample[][][] {
  if ((opts.unit ?? 'calls') === 'calls') return planMinibatches(examples, opts.minibatchSize, opts.seed, opts.step).map((b) => [b]);
  return planMinibatches(groupByTrajectory(examples), opts.minibatchSize, opts.seed, opts.step).map((groups) => {
    const rows = groups.flat().map((e, i) => ({ e, i })).sort((a, b) => a.e.tokens.length - b.e.tokens.length || a.i - b.i).map((r) => r.e);
    const micro: TrainingExample[][] = [];
    for (let i = 0; i < rows.length; i += MICRO_BATCH_ROWS) micro.push(rows.slice(i, i + MICRO_BATCH_ROWS));
    return micro;
  });
}

/**
 * One SFT epoch over the examples, one AdamW update per minibatch. Unit 'calls': every minibatch is padded
 * to `minibatchSize` rows (one session shape). Unit 'trajectories': every micro-batch is padded to
 * MICRO_BATCH_ROWS rows and the update accumulates their gradients, weighted by their trained tokens.
 */
export async function runSftEpoch(trainer: Trainer, examples: readonly TrainingExample[], opts: SftEpochOptions): Promise<SftEpochResult> {
  const unit = opts.unit ?? 'calls';
  if (!MINIBATCH_UNITS.includes(unit)) throw new Error(`minibatch unit must be one of ${MINIBATCH_UNITS.join(', ')}, got ${String(unit)}`);
  const batches = planUpdates(examples, { ...opts, unit });
  const start = opts.startMinibatch ?? 0;
  let lossSum = 0;
  let trained = 0;
  let tokens = 0;
  for (let b = start; b < batches.length; b++) {
    const micro = batches[b];
    const r = unit === 'calls'
      ? await trainer.step(toBatch(micro[0], opts.minibatchSize), opts.hyper)
      : await trainer.accumulateStep(micro.map((rows) => toBatch(rows, MICRO_BATCH_ROWS)), opts.hyper);
    lossSum += r.loss;
    trained++;
    tokens += micro.flat().reduce((n, e) => n + e.weights.reduce((a, w) => a + w, 0), 0);
    await opts.onMinibatch?.(b + 1, batches.length, r.loss);
  }
  return { minibatches: batches.length, trainedMinibatches: trained, meanLoss: trained ? lossSum / trained : null, tokens };
}
