// The training engine that owns the ORT sessions (one per rows x length bucket) and the flat parameter,
// AdamW-moment and step state. It runs inside the trainer's worker thread: onnxruntime-node's "async"
// run executes synchronously on the calling thread, so running it on the main thread would stall heartbeats.
import * as ort from 'onnxruntime-node';
import type { Checkpoint } from './checkpoint';
import { ModelConfig, paramLayout } from './config';
import { createSession, RuntimeOptions } from './ort-session';
import { buildTrainGraph, HYPER_INDEX } from './train-graph';
import type { PackedBatch, StepHyperparams, StepResult } from './trainer-batch';

/** Sessions kept per trainer: each holds its own plan and arena, so memory grows with distinct shapes. */
const MAX_SESSIONS = 6;

export class TrainerCore {
  private readonly sessions = new Map<string, Promise<ort.InferenceSession>>();
  private params: Float32Array;
  private adamM: Float32Array;
  private adamV: Float32Array;
  private stepCount: number;
  readonly config: ModelConfig;

  constructor(
    state: Checkpoint,
    private readonly options: RuntimeOptions,
  ) {
    this.config = state.config;
    const total = paramLayout(state.config).total;
    for (const [name, arr] of [['params', state.params], ['adamM', state.adamM], ['adamV', state.adamV]] as const) {
      if (arr.length !== total) throw new Error(`${name} has ${arr.length} values but this config needs ${total}: is the checkpoint for another model config?`);
    }
    this.params = state.params;
    this.adamM = state.adamM;
    this.adamV = state.adamV;
    this.stepCount = state.step;
  }

  state(): Checkpoint {
    return { config: this.config, params: this.params.slice(), adamM: this.adamM.slice(), adamV: this.adamV.slice(), step: this.stepCount };
  }

  /** The cached session for a batch shape (building one takes ~0.1-1 s); least recently used evicted. */
  private session(rows: number, seqLen: number): Promise<ort.InferenceSession> {
    const key = `${rows}x${seqLen}`;
    let s = this.sessions.get(key);
    if (s) {
      this.sessions.delete(key); // re-insert: Map order is recency order
      this.sessions.set(key, s);
    } else {
      if (this.sessions.size >= MAX_SESSIONS) {
        const [oldest, old] = this.sessions.entries().next().value as [string, Promise<ort.InferenceSession>];
        this.sessions.delete(oldest);
        void old.then((x) => x.release()).catch(() => undefined);
      }
      // At long contexts activations dominate memory: recompute attention and MLP activations in backward.
      const long = seqLen >= 512;
      const bytes = buildTrainGraph(this.config, { rows, seqLen, mode: 'train', recomputeAttention: long });
      s = createSession(bytes, this.options);
      this.sessions.set(key, s);
    }
    return s;
  }

  async step(packed: PackedBatch, hyper: StepHyperparams): Promise<StepResult> {
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
