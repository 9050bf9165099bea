// The Trainer: parameters, AdamW moments and step count as flat Float32Arrays, one cached ORT session per
// (rows, length bucket), and an async `step` (ORT runs off the event loop, so activities keep heartbeating).
import * as ort from 'onnxruntime-node';
import type { ArtifactRef } from '../store/artifact-ref';
import type { ArtifactStore } from '../store/artifact-store';
import { Checkpoint, loadCheckpoint, saveCheckpoint } from './checkpoint';
import { bucketLength, ModelConfig, paramLayout } from './config';
import { initParams } from './init';
import { createSession, RuntimeOptions } from './ort-session';
import { SPECIAL_TOKENS } from './tokenizer';
import { buildTrainGraph, HYPER_INDEX } from './train-graph';

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
}

/** The trainer's whole state is a checkpoint. */
export type TrainerState = Checkpoint;

/** Packed feeds for one batch: inputs, shifted targets and weights, padded to the length bucket. */
export function packBatch(config: ModelConfig, batch: TrainBatch): { rows: number; seqLen: number; tokens: Int32Array; targets: Int32Array; weights: Float32Array; count: number; weighted: number } {
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
  const tokens = new Int32Array(rows * seqLen).fill(SPECIAL_TOKENS.PAD);
  const targets = new Int32Array(rows * seqLen).fill(SPECIAL_TOKENS.PAD);
  const weights = new Float32Array(rows * seqLen);
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
  return { rows, seqLen, tokens, targets, weights, count, weighted };
}

export class Trainer {
  private readonly sessions = new Map<string, Promise<ort.InferenceSession>>();
  params: Float32Array;
  adamM: Float32Array;
  adamV: Float32Array;
  stepCount: number;

  constructor(
    readonly config: ModelConfig,
    state: { params: Float32Array; adamM?: Float32Array; adamV?: Float32Array; step?: number },
    readonly options: RuntimeOptions = {},
  ) {
    const total = paramLayout(config).total;
    for (const [name, arr] of [['params', state.params], ['adamM', state.adamM], ['adamV', state.adamV]] as const) {
      if (arr && arr.length !== total) throw new Error(`${name} has ${arr.length} values but this config needs ${total}: is the checkpoint for another model config?`);
    }
    this.params = state.params;
    this.adamM = state.adamM ?? new Float32Array(total);
    this.adamV = state.adamV ?? new Float32Array(total);
    this.stepCount = state.step ?? 0;
  }

  static fromSeed(config: ModelConfig, seed: number, options: RuntimeOptions = {}): Trainer {
    return new Trainer(config, { params: initParams(config, seed) }, options);
  }

  static fromState(state: TrainerState, options: RuntimeOptions = {}): Trainer {
    return new Trainer(state.config, { params: state.params.slice(), adamM: state.adamM.slice(), adamV: state.adamV.slice(), step: state.step }, options);
  }

  /** Resumes from a stored checkpoint (weights, AdamW moments and step). */
  static async loadCheckpoint(store: ArtifactStore, ref: ArtifactRef, options: RuntimeOptions = {}): Promise<Trainer> {
    const ck = await loadCheckpoint(store, ref);
    return new Trainer(ck.config, { params: ck.params, adamM: ck.adamM, adamV: ck.adamV, step: ck.step }, options);
  }

  saveCheckpoint(store: ArtifactStore): Promise<ArtifactRef> {
    return saveCheckpoint(store, this.state());
  }

  state(): TrainerState {
    return { config: this.config, params: this.params, adamM: this.adamM, adamV: this.adamV, step: this.stepCount };
  }

  /** The cached session for a batch shape (building one takes ~0.1-1 s; keep row counts steady). */
  session(rows: number, seqLen: number): Promise<ort.InferenceSession> {
    const key = `${rows}x${seqLen}`;
    let s = this.sessions.get(key);
    if (!s) {
      // At long contexts the T x T attention probabilities dominate memory: recompute them in backward.
      const long = seqLen >= 512;
      const bytes = buildTrainGraph(this.config, { rows, seqLen, mode: 'train', recomputeAttention: long });
      s = createSession(bytes, { ...this.options, memoryPattern: long ? false : this.options.memoryPattern });
      this.sessions.set(key, s);
    }
    return s;
  }

  async step(batch: TrainBatch, hyper: StepHyperparams = DEFAULT_HYPERPARAMS): Promise<StepResult> {
    const packed = packBatch(this.config, batch);
    const session = await this.session(packed.rows, packed.seqLen);
    const t = this.stepCount + 1;
    const h = new Float32Array(8);
    h[HYPER_INDEX.lr] = hyper.lr;
    h[HYPER_INDEX.weightDecay] = hyper.weightDecay;
    h[HYPER_INDEX.beta1] = hyper.beta1;
    h[HYPER_INDEX.beta2] = hyper.beta2;
    h[HYPER_INDEX.eps] = hyper.eps;
    h[HYPER_INDEX.biasCorr1] = 1 - Math.pow(hyper.beta1, t);
    h[HYPER_INDEX.biasCorr2] = 1 - Math.pow(hyper.beta2, t);
    h[HYPER_INDEX.clipNorm] = hyper.clipNorm > 0 ? hyper.clipNorm : Infinity;
    const P = this.params.length;
    const shape = [packed.rows, packed.seqLen];
    const out = await session.run({
      params: new ort.Tensor('float32', this.params, [P]),
      m: new ort.Tensor('float32', this.adamM, [P]),
      v: new ort.Tensor('float32', this.adamV, [P]),
      hyper: new ort.Tensor('float32', h, [8]),
      tokens: new ort.Tensor('int32', packed.tokens, shape),
      targets: new ort.Tensor('int32', packed.targets, shape),
      weights: new ort.Tensor('float32', packed.weights, shape),
    });
    const loss = Number(out.loss.data[0]);
    const gradNorm = Number(out.grad_norm.data[0]);
    if (!Number.isFinite(loss) || !Number.isFinite(gradNorm)) {
      // Keep the old weights: a non-finite step would poison every later one.
      throw new Error(`training step ${t} produced loss ${loss}, grad norm ${gradNorm}: lower the learning rate or check the batch`);
    }
    this.params = out.params_out.data as Float32Array;
    this.adamM = out.m_out.data as Float32Array;
    this.adamV = out.v_out.data as Float32Array;
    this.stepCount = t;
    return { loss, gradNorm, tokens: packed.count, weightedTokens: packed.weighted };
  }

  async close(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    for (const s of all) await (await s).release();
  }
}
