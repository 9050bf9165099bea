// Training-batch types and packing: rows of tokens and per-token loss weights become the training graph's
// padded inputs (inputs, shifted targets, weights) for the smallest length bucket that fits.
import { bucketLength, ModelConfig } from '../config';
import { SPECIAL_TOKENS } from '../tokenizer';

/**
 * One training batch of independent rows. `lossWeights[r][i]` weights the loss of predicting
 * `tokens[r][i]` from the tokens before it (so index 0 is never a target): 0 for prompt, tool-output and
 * pad tokens, 1 for model-generated tokens. Rows may differ in length; each needs at least 2 tokens.
 */
export interface TrainBatch {
  tokens: ReadonlyArray<ArrayLike<number>>;
  lossWeights: ReadonlyArray<ArrayLike<number>>;
}

export interface StepHyperparams {
  lr: number;
  weightDecay: number;
  /** Global gradient-norm clip; 0 or Infinity disables clipping. */
  clipNorm: number;
  beta1: number;
  beta2: number;
  eps: number;
}

export const DEFAULT_HYPERPARAMS: StepHyperparams = { lr: 1e-3, weightDecay: 0.1, clipNorm: 1, beta1: 0.9, beta2: 0.95, eps: 1e-8 };

export interface StepResult {
  /** sum(w * nll) / sum(w) over the batch, before the update. */
  loss: number;
  /** Global L2 norm of the gradient before clipping. */
  gradNorm: number;
  /** Target positions in the batch (excluding padding). */
  tokens: number;
  /** Target positions with non-zero loss weight. */
  weightedTokens: number;
  /** Where the step's time went, ms (for benchmarks; wall time, so it varies with machine load). */
  phases?: StepPhases;
}

/**
 * `pack`: validating and padding the rows (main thread); `graph`: the forward + backward graphs (with the
 * fused optimizer in a one-graph step); `optimizer`: combining shares' gradients and the AdamW graph
 * (data-parallel and accumulated steps only); `transfer`: the rest (worker messages, copies).
 */
export interface StepPhases { packMs: number; graphMs: number; optimizerMs: number; transferMs: number }


/** Packed feeds for one batch: inputs, shifted targets and weights, padded to the length bucket. */
export interface PackedBatch {
  /** Rows in the graph (the batch's rows rounded up to a row bucket). */
  rows: number;
  seqLen: number;
  tokens: Int32Array;
  targets: Int32Array;
  weights: Float32Array;
  count: number;
  weighted: number;
}

/**
 * Row buckets: 1, 2, 4, 8, then multiples of 8. RSFT batches vary in size step to step; bucketing bounds
 * the number of distinct graphs (one ORT session each) at a padding cost of at most 12.5% above 8 rows.
 */
export function bucketRows(rows: number): number {
  if (rows <= 8) return 1 << Math.ceil(Math.log2(rows));
  return Math.ceil(rows / 8) * 8;
}

export function packBatch(config: ModelConfig, batch: TrainBatch): PackedBatch {
  const rows = batch.tokens.length;
  if (rows === 0 || batch.lossWeights.length !== rows) throw new Error(`training batch needs >= 1 row and one lossWeights row per tokens row (got ${rows} and ${batch.lossWeights.length})`);
  let maxLen = 0;
  for (let r = 0; r < rows; r++) {
    const n = batch.tokens[r].length;
    if (n < 2) throw new Error(`training row ${r} has ${n} tokens: a row needs at least 2 (a context and a target)`);
    if (batch.lossWeights[r].length !== n) throw new Error(`training row ${r}: lossWeights has ${batch.lossWeights[r].length} entries for ${n} tokens`);
    maxLen = Math.max(maxLen, n - 1);
  }
  const seqLen = bucketLength(maxLen, config.contextLength);
  // Padding rows (all PAD, weight 0) contribute exactly zero gradient and leave the loss unchanged.
  const padded = bucketRows(rows);
  const tokens = new Int32Array(padded * seqLen).fill(SPECIAL_TOKENS.PAD);
  const targets = new Int32Array(padded * seqLen).fill(SPECIAL_TOKENS.PAD);
  const weights = new Float32Array(padded * seqLen);
  let count = 0;
  let weighted = 0;
  for (let r = 0; r < rows; r++) {
    const t = batch.tokens[r];
    const w = batch.lossWeights[r];
    for (let i = 0; i + 1 < t.length; i++) {
      const id = t[i + 1];
      if (!(id >= 0 && id < config.vocabSize) || !(t[i] >= 0 && t[i] < config.vocabSize)) throw new Error(`training row ${r} holds token id outside [0, ${config.vocabSize})`);
      tokens[r * seqLen + i] = t[i];
      targets[r * seqLen + i] = id;
      const wi = w[i + 1];
      if (!(wi >= 0) || !Number.isFinite(wi)) throw new Error(`training row ${r}: loss weights must be finite and >= 0`);
      weights[r * seqLen + i] = wi;
      count++;
      if (wi > 0) weighted++;
    }
  }
  return { rows: padded, seqLen, tokens, targets, weights, count, weighted };
}

