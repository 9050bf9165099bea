// The training engine that owns the ORT sessions (one per rows x length bucket) and the flat parameter,
// AdamW-moment and step state. It runs inside the trainer's worker thread: onnxruntime-node's "async"
// run executes synchronously on the calling thread, so running it on the main thread would stall heartbeats.
// With 2+ threads (not deterministic) a step below 512 tokens per row is data-parallel: this thread and a
// helper worker each take half the rows on one intra-op thread, then a small graph combines the gradients
// and applies AdamW. One synchronisation per step instead of one per op keeps two cores busy even when
// the machine is shared (where ORT's per-op parallelism, spinning or not, fell to 1-thread speed or below).
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import type { Checkpoint } from '../checkpoints/checkpoint';
import { ModelConfig, paramLayout } from '../config';
import { buildAdamWGraph, buildTrainGraph, HYPER_INDEX } from '../graph/training-graph';
import { createSession, RuntimeOptions } from '../runtime/ort-session';
import { WorkerClient } from '../runtime/worker-client';
import type { PackedBatch, StepHyperparams, StepResult } from './batch';
import { GradSessions, MAX_SESSIONS } from './grad-sessions';
import type { GradRequest } from './protocol';

/** Rows [from, to) of a packed batch (copies, so the arrays can be sent to another thread). */
function sliceRows(p: PackedBatch, from: number, to: number): PackedBatch {
  const a = from * p.seqLen;
  const b = to * p.seqLen;
  return { rows: to - from, seqLen: p.seqLen, tokens: p.tokens.slice(a, b), targets: p.targets.slice(a, b), weights: p.weights.slice(a, b), count: 0, weighted: 0 };
}

function sum(xs: Float32Array): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return s;
}

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
    if (!options.deterministic && (options.threads ?? 2) >= 2) {
      this.local = new GradSessions(state.config, options);
      this.helper = new WorkerClient<GradRequest>(path.join(__dirname, 'grad-helper-worker'), { config: state.config, options }, 'gradient helper');
    }
  }

  private local: GradSessions | undefined;
  private helper: WorkerClient<GradRequest> | undefined;
  private adamw: Promise<ort.InferenceSession> | undefined;

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

  private hyperVector(hyper: StepHyperparams, t: number): Float32Array {
    const h = new Float32Array(8);
    h[HYPER_INDEX.lr] = hyper.lr;
    h[HYPER_INDEX.weightDecay] = hyper.weightDecay;
    h[HYPER_INDEX.beta1] = hyper.beta1;
    h[HYPER_INDEX.beta2] = hyper.beta2;
    h[HYPER_INDEX.eps] = hyper.eps;
    h[HYPER_INDEX.biasCorr1] = 1 - Math.pow(hyper.beta1, t);
    h[HYPER_INDEX.biasCorr2] = 1 - Math.pow(hyper.beta2, t);
    h[HYPER_INDEX.clipNorm] = hyper.clipNorm > 0 ? hyper.clipNorm : Infinity;
    return h;
  }

  /** Applies the outputs of an optimizer graph, refusing a non-finite step (the old state is kept). */
  private accept(loss: number, out: ort.InferenceSession.OnnxValueMapType, t: number): number {
    const gradNorm = Number(out.grad_norm.data[0]);
    if (!Number.isFinite(loss) || !Number.isFinite(gradNorm)) {
      throw new Error(`training step ${t} produced loss ${loss}, grad norm ${gradNorm}: lower the learning rate or check the batch`);
    }
    this.params = out.params_out.data as Float32Array;
    this.adamM = out.m_out.data as Float32Array;
    this.adamV = out.v_out.data as Float32Array;
    this.stepCount = t;
    return gradNorm;
  }

  async step(packed: PackedBatch, hyper: StepHyperparams): Promise<StepResult> {
    // Long buckets stay single-graph: two sessions' activations would not fit the 1 GiB budget at 4 x 1024.
    if (this.local && this.helper && packed.rows >= 2 && packed.seqLen < 512) return this.parallelStep(packed, hyper, this.local, this.helper);
    const session = await this.session(packed.rows, packed.seqLen);
    const t = this.stepCount + 1;
    const h = this.hyperVector(hyper, t);
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
    const gradNorm = this.accept(loss, out, t);
    return { loss, gradNorm, tokens: packed.count, weightedTokens: packed.weighted };
  }

  /** Half the rows here, half in the helper (concurrently), then combine and update. */
  private async parallelStep(packed: PackedBatch, hyper: StepHyperparams, local: GradSessions, helper: WorkerClient<GradRequest>): Promise<StepResult> {
    const t = this.stepCount + 1;
    const half = packed.rows / 2;
    const a = sliceRows(packed, 0, half);
    const b = sliceRows(packed, half, packed.rows);
    // Each half's graph normalises by its own weight sum; shares restore sum(w * nll) / sum(w) overall.
    const [wa, wb] = [sum(a.weights), sum(b.weights)];
    const shares = wa + wb > 0 ? Float32Array.from([wa / (wa + wb), wb / (wa + wb)]) : new Float32Array(2);
    const remote = helper.request<{ loss: number; grad: Float32Array }>({ op: 'grad', params: this.params, packed: b });
    const mine = await local.run(this.params, a);
    const theirs = await remote;
    const loss = shares[0] * mine.loss + shares[1] * theirs.loss;
    this.adamw ??= createSession(buildAdamWGraph(this.config), { ...this.options, threads: 1 });
    const P = this.params.length;
    const out = await (await this.adamw).run({
      params: new ort.Tensor('float32', this.params, [P]),
      m: new ort.Tensor('float32', this.adamM, [P]),
      v: new ort.Tensor('float32', this.adamV, [P]),
      hyper: new ort.Tensor('float32', this.hyperVector(hyper, t), [8]),
      grad_a: new ort.Tensor('float32', mine.grad, [P]),
      grad_b: new ort.Tensor('float32', theirs.grad, [P]),
      shares: new ort.Tensor('float32', shares, [2]),
    });
    const gradNorm = this.accept(loss, out, t);
    return { loss, gradNorm, tokens: packed.count, weightedTokens: packed.weighted };
  }

  /**
   * One AdamW update from several micro-batches: each micro-batch's gradient (normalised by its own weight
   * sum) is scaled by its share of the total weight and summed in micro-batch order, so the update is that
   * of sum(w * nll) / sum(w) over all of them (up to float rounding) at one micro-batch's memory. With a
   * helper thread, micro-batches run two at a time; the sum's order stays fixed.
   */
  async accumulate(packs: PackedBatch[], hyper: StepHyperparams): Promise<StepResult> {
    const live = packs.filter((p) => sum(p.weights) > 0);
    if (live.length === 0) throw new Error('a training step needs at least one micro-batch with a non-zero loss weight');
    if (live.length === 1) return this.step(live[0], hyper);
    const t = this.stepCount + 1;
    const P = this.params.length;
    const local = (this.gradLocal ??= this.local ?? new GradSessions(this.config, this.options));
    const results: Array<{ loss: number; grad: Float32Array }> = [];
    for (let i = 0; i < live.length; i += this.helper ? 2 : 1) {
      const remote = this.helper && i + 1 < live.length ? this.helper.request<{ loss: number; grad: Float32Array }>({ op: 'grad', params: this.params, packed: live[i + 1] }) : null;
      results.push(await local.run(this.params, live[i]));
      if (remote) results.push(await remote);
    }
    const weights = live.map((p) => sum(p.weights));
    const total = weights.reduce((a, b) => a + b, 0);
    const acc = new Float64Array(P);
    let loss = 0;
    results.forEach((r, k) => {
      const share = weights[k] / total;
      loss += share * r.loss;
      for (let i = 0; i < P; i++) acc[i] += share * r.grad[i];
    });
    this.adamw ??= createSession(buildAdamWGraph(this.config), { ...this.options, threads: 1 });
    const out = await (await this.adamw).run({
      params: new ort.Tensor('float32', this.params, [P]),
      m: new ort.Tensor('float32', this.adamM, [P]),
      v: new ort.Tensor('float32', this.adamV, [P]),
      hyper: new ort.Tensor('float32', this.hyperVector(hyper, t), [8]),
      grad_a: new ort.Tensor('float32', Float32Array.from(acc), [P]),
      grad_b: new ort.Tensor('float32', new Float32Array(P), [P]),
      shares: new ort.Tensor('float32', Float32Array.from([1, 0]), [2]),
    });
    const gradNorm = this.accept(loss, out, t);
    return { loss, gradNorm, tokens: live.reduce((n, p) => n + p.count, 0), weightedTokens: live.reduce((n, p) => n + p.weighted, 0) };
  }

  /** Gradient sessions for accumulation when there is no data-parallel pair (deterministic or 1 thread). */
  private gradLocal: GradSessions | undefined;

  async close(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    for (const s of all) await (await s).release();
    if (this.adamw) await (await this.adamw).release();
    await this.local?.close();
    if (this.gradLocal !== this.local) await this.gradLocal?.close();
    await this.helper?.close({ op: 'close' });
  }
}
