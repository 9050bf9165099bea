// The training engine that owns the ORT sessions (one per rows x length bucket) and the flat parameter,
// AdamW-moment and step state. It runs inside the trainer's worker thread: onnxruntime-node's "async"
// run executes synchronously on the calling thread, so running it on the main thread would stall heartbeats.
// With N >= 2 threads a step is data-parallel: this thread and N - 1 helper workers each take a share of the
// rows on one intra-op thread, then the gradients are combined in a fixed order and AdamW applied. One
// synchronisation per step instead of one per op keeps the cores busy even on a shared machine (where ORT's
// per-op parallelism, spinning or not, fell to 1-thread speed or below), and every gradient comes from a
// 1-thread session whose result does not depend on scheduling: deterministic mode uses this path at N
// threads, at every length (the single-graph N-thread path is not bit-reproducible from 512 tokens).
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
    const threads = Math.max(1, Math.floor(options.threads ?? 2));
    for (let i = 1; i < threads; i++) {
      this.helpers.push(new WorkerClient<GradRequest>(path.join(__dirname, 'grad-helper-worker'), { config: state.config, options }, 'gradient helper'));
    }
  }

  /** Gradient sessions on this thread (data-parallel shares and accumulation micro-batches). */
  private gradLocal: GradSessions | undefined;
  /** N - 1 helper threads for N configured threads; none with 1 thread. */
  private readonly helpers: WorkerClient<GradRequest>[] = [];
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

  /**
   * Whether a batch is split across threads. Deterministic mode always splits (when there are 2+ rows and
   * threads). Otherwise long buckets stay single-graph: there ORT's own 2-thread matmuls are as fast, and
   * one session's activations are smaller than several (the 1 GiB budget at 4 x 1024).
   */
  private splits(packed: PackedBatch): boolean {
    if (this.helpers.length === 0 || packed.rows < 2) return false;
    return this.options.deterministic === true || packed.seqLen < 512;
  }

  async step(packed: PackedBatch, hyper: StepHyperparams): Promise<StepResult> {
    if (this.splits(packed)) return this.parallelStep(packed, hyper);
    const session = await this.session(packed.rows, packed.seqLen);
    const t = this.stepCount + 1;
    const h = this.hyperVector(hyper, t);
    const P = this.params.length;
    const shape = [packed.rows, packed.seqLen];
    const t0 = performance.now();
    const out = await session.run({
      params: new ort.Tensor('float32', this.params, [P]),
      m: new ort.Tensor('float32', this.adamM, [P]),
      v: new ort.Tensor('float32', this.adamV, [P]),
      hyper: new ort.Tensor('float32', h, [8]),
      tokens: new ort.Tensor('int32', packed.tokens, shape),
      targets: new ort.Tensor('int32', packed.targets, shape),
      weights: new ort.Tensor('float32', packed.weights, shape),
    });
    const graphMs = performance.now() - t0;
    const loss = Number(out.loss.data[0]);
    const gradNorm = this.accept(loss, out, t);
    return { loss, gradNorm, tokens: packed.count, weightedTokens: packed.weighted, phases: { packMs: 0, graphMs, optimizerMs: 0, transferMs: 0 } };
  }

  /**
   * The rows split into min(threads, rows) contiguous shares (sizes differ by at most one row). From 512
   * tokens every row is its own share, taken N at a time: N one-row sessions hold less than N sessions of
   * rows / N rows (3m at 4 x 1024 on 2 threads: 1087 MiB peak with 2-row shares, under 1 GiB with 1-row).
   */
  private async parallelStep(packed: PackedBatch, hyper: StepHyperparams): Promise<StepResult> {
    const perRow = packed.seqLen >= 512;
    const parts = perRow ? packed.rows : Math.min(this.helpers.length + 1, packed.rows);
    const bounds = Array.from({ length: parts + 1 }, (_, i) => Math.floor((packed.rows * i) / parts));
    let shares = bounds.slice(0, -1).map((from, i) => sliceRows(packed, from, bounds[i + 1]));
    // A padding row (weight 0) adds exactly zero to the float64 sum: skipping it changes no bit.
    if (perRow && shares.some((p) => sum(p.weights) > 0)) shares = shares.filter((p) => sum(p.weights) > 0);
    const t0 = performance.now();
    const grads = await this.gradients(shares);
    const t1 = performance.now();
    const result = await this.combineAndUpdate(shares, grads, hyper, !perRow);
    return { ...result, tokens: packed.count, weightedTokens: packed.weighted, phases: { packMs: 0, graphMs: t1 - t0, optimizerMs: performance.now() - t1, transferMs: 0 } };
  }

  /**
   * Loss and gradient of each pack at the current parameters, each on a 1-thread session: this thread and
   * the helpers take them in waves, pack i always on the same thread for a given N (results in pack order).
   */
  private async gradients(packs: PackedBatch[]): Promise<Array<{ loss: number; grad: Float32Array }>> {
    const local = (this.gradLocal ??= new GradSessions(this.config, this.options));
    const out: Array<{ loss: number; grad: Float32Array }> = [];
    const width = this.helpers.length + 1;
    for (let i = 0; i < packs.length; i += width) {
      const remote = this.helpers.slice(0, Math.min(width, packs.length - i) - 1).map((h, j) => h.request<{ loss: number; grad: Float32Array }>({ op: 'grad', params: this.params, packed: packs[i + 1 + j] }));
      // Every request is awaited (even after a local failure), so no rejection goes unobserved.
      const settled = await Promise.allSettled([local.run(this.params, packs[i]), ...remote]);
      for (const r of settled) {
        if (r.status === 'rejected') throw r.reason;
        out.push(r.value);
      }
    }
    return out;
  }

  /**
   * One AdamW update from per-pack gradients, each normalised by its own weight sum: pack k's gradient is
   * scaled by its share of the total weight, so the update is that of sum(w * nll) / sum(w) over all packs
   * (up to float rounding). With `pairInGraph` two packs combine inside the optimizer graph (float32 shares);
   * otherwise they are summed here in float64, in pack order. Either way the order is fixed, so equal inputs
   * give equal bits (and each path gives the bits it gave before the N-thread split existed).
   */
  private async combineAndUpdate(packs: PackedBatch[], results: Array<{ loss: number; grad: Float32Array }>, hyper: StepHyperparams, pairInGraph: boolean): Promise<{ loss: number; gradNorm: number }> {
    const t = this.stepCount + 1;
    const P = this.params.length;
    const weights = packs.map((p) => sum(p.weights));
    const total = weights.reduce((a, b) => a + b, 0);
    const inGraph = pairInGraph && results.length === 2;
    const shares = weights.map((w) => (total > 0 ? w / total : 0));
    const used = inGraph ? Float32Array.from(shares) : shares;
    let loss = 0;
    results.forEach((r, k) => (loss += used[k] * r.loss));
    let gradA: Float32Array;
    let gradB: Float32Array;
    let pair: Float32Array;
    if (inGraph) {
      [gradA, gradB, pair] = [results[0].grad, results[1].grad, used as Float32Array];
    } else {
      const acc = new Float64Array(P);
      results.forEach((r, k) => {
        for (let i = 0; i < P; i++) acc[i] += shares[k] * r.grad[i];
      });
      [gradA, gradB, pair] = [Float32Array.from(acc), new Float32Array(P), Float32Array.from([1, 0])];
    }
    this.adamw ??= createSession(buildAdamWGraph(this.config), { ...this.options, threads: 1 });
    const out = await (await this.adamw).run({
      params: new ort.Tensor('float32', this.params, [P]),
      m: new ort.Tensor('float32', this.adamM, [P]),
      v: new ort.Tensor('float32', this.adamV, [P]),
      hyper: new ort.Tensor('float32', this.hyperVector(hyper, t), [8]),
      grad_a: new ort.Tensor('float32', gradA, [P]),
      grad_b: new ort.Tensor('float32', gradB, [P]),
      shares: new ort.Tensor('float32', pair, [2]),
    });
    return { loss, gradNorm: this.accept(loss, out, t) };
  }

  /**
   * One AdamW update from several micro-batches at one micro-batch's memory (see combineAndUpdate); with
   * helper threads the micro-batches run N at a time, the sum's order stays fixed.
   */
  async accumulate(packs: PackedBatch[], hyper: StepHyperparams): Promise<StepResult> {
    const live = packs.filter((p) => sum(p.weights) > 0);
    if (live.length === 0) throw new Error('a training step needs at least one micro-batch with a non-zero loss weight');
    if (live.length === 1) return this.step(live[0], hyper);
    const t0 = performance.now();
    const grads = await this.gradients(live);
    const t1 = performance.now();
    const result = await this.combineAndUpdate(live, grads, hyper, false);
    const phases = { packMs: 0, graphMs: t1 - t0, optimizerMs: performance.now() - t1, transferMs: 0 };
    return { ...result, tokens: live.reduce((n, p) => n + p.count, 0), weightedTokens: live.reduce((n, p) => n + p.weighted, 0), phases };
  }

  async close(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    for (const s of all) await (await s).release();
    if (this.adamw) await (await this.adamw).release();
    await this.gradLocal?.close();
    for (const h of this.helpers) await h.close({ op: 'close' });
  }
}
