// The SFT half of an online RSFT step (docs/method.md, "Weight phase"): accepted trajectories become
// per-model-call examples (prompt weight 0, generated weight 1), shuffled by a seed derived from the run seed
// and step, cut into fixed-size minibatches, and trained for one epoch. Used by the fineTuneStep activity,
// the headroom report and pretraining alike, so all three train the same way.
import { trainingExamplesFromTrajectories, type TrainingExample, type Trajectory } from '../agent/trajectory';
import type { StepHyperparams, Trainer } from '../model';
import { Rng } from '../domains/common/rng';

export interface SftEpochOptions {
  minibatchSize: number;
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

/**
 * One SFT epoch over the examples. Every minibatch is padded to `minibatchSize` rows with all-zero-weight
 * rows, so the trainer keeps one session shape (static shapes) and padding contributes no gradient.
 */
export async function runSftEpoch(trainer: Trainer, examples: readonly TrainingExample[], opts: SftEpochOptions): Promise<SftEpochResult> {
  const batches = planMinibatches(examples, opts.minibatchSize, opts.seed, opts.step);
  const start = opts.startMinibatch ?? 0;
  let lossSum = 0;
  let trained = 0;
  let tokens = 0;
  for (let b = start; b < batches.length; b++) {
    const rows = batches[b];
    const tokenRows = rows.map((e) => Int32Array.from(e.tokens));
    const weightRows = rows.map((e) => Float32Array.from(e.weights));
    while (tokenRows.length < opts.minibatchSize) {
      tokenRows.push(Int32Array.from([0, 0]));
      weightRows.push(Float32Array.from([0, 0]));
    }
    const r = await trainer.step({ tokens: tokenRows, lossWeights: weightRows }, opts.hyper);
    lossSum += r.loss;
    trained++;
    tokens += rows.reduce((n, e) => n + e.weights.reduce((a, w) => a + w, 0), 0);
    await opts.onMinibatch?.(b + 1, batches.length, r.loss);
  }
  return { minibatches: batches.length, trainedMinibatches: trained, meanLoss: trained ? lossSum / trained : null, tokens };
}
