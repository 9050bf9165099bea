// Where a training step's graph time goes: onnxruntime's own per-node profile (session profiling, a JSON
// trace) of the graph the trainer runs for a batch shape, aggregated by op group and by forward / backward,
// with the achieved GFLOP/s of the matmul nodes themselves against ORT's MatMul rate on the block shapes.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { forwardFlopsPerToken, modelConfig, paramLayout, type PresetName } from '../model/config';
import { buildTrainGraph } from '../model/graph/training-graph';
import { sessionOptions } from '../model/runtime/ort-session';
import { initParams } from '../model/checkpoints/init-params';
import { Xoshiro128 } from '../common/xoshiro';
import { configMatmulGflops } from '../scripts/bench-runtime';

/** Op groups of the table, in print order; an op in none of them counts as 'other'. */
export const OP_GROUPS: Record<string, readonly string[]> = {
  matmul: ['MatMul', 'Gemm', 'FusedMatMul', 'FusedGemm', 'MatMulInteger'],
  softmax: ['Softmax', 'LogSoftmax', 'SoftmaxGrad', 'SoftmaxGrad_13', 'LogSoftmaxGrad'],
  layernorm: ['LayerNormalization', 'SkipLayerNormalization', 'SimplifiedLayerNormalization', 'LayerNormalizationGrad'],
  elementwise: ['Add', 'Sub', 'Mul', 'Div', 'Neg', 'Exp', 'Log', 'Sqrt', 'Reciprocal', 'Sigmoid', 'Tanh', 'Erf', 'Gelu', 'FastGelu', 'BiasGelu', 'Max', 'Min', 'Pow', 'Where', 'Equal', 'Cast', 'Relu', 'Abs'],
  'layout copies': ['Transpose', 'Reshape', 'Concat', 'Split', 'Slice', 'Expand', 'Squeeze', 'Unsqueeze', 'Pad', 'Identity', 'Flatten', 'Tile'],
  reductions: ['ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceSumSquare', 'ReduceL2'],
  'gather / scatter': ['Gather', 'GatherElements', 'GatherND', 'ScatterND', 'ScatterElements', 'OneHot'],
};

const groupOf = (op: string): string => Object.keys(OP_GROUPS).find((g) => OP_GROUPS[g].includes(op)) ?? 'other';

/** The events of an ORT profile trace that matter here (the file holds more fields). */
export interface ProfileEvent {
  cat: string;
  name: string;
  ts: number;
  dur: number;
  args?: { op_name?: string; node_index?: string; input_type_shape?: Array<Record<string, number[]>>; output_type_shape?: Array<Record<string, number[]>> };
}

/** `ms`: the sum of the group's node medians; `bestMs`: of each node's fastest run. */
export interface GroupShare { group: string; nodes: number; ms: number; bestMs: number; forwardMs: number; backwardMs: number; share: number }

export interface ProfileAggregate {
  runs: number;
  /** Median of ORT's model_run (the whole run as the session saw it), ms. */
  runMs: number;
  /** Sum over nodes of each node's median kernel time across runs, ms (runMs minus this: executor, preemption). */
  nodeMs: number;
  /** Sum over nodes of each node's fastest run, ms: the graph's kernel time undisturbed. */
  nodeBestMs: number;
  nodesPerRun: number;
  forwardMs: number;
  backwardMs: number;
  groups: GroupShare[];
  /** Per op type, largest first. */
  ops: Array<{ op: string; group: string; nodes: number; ms: number; share: number }>;
  /**
   * The matmul group: its FLOPs per run (from the nodes' shapes) and their rate at each node's median time,
   * and at each node's fastest run (the least disturbed, as the MatMul reference takes its best run).
   */
  matmul: { flops: number; ms: number; gflops: number; bestMs: number; bestGflops: number };
}

const dims = (s: Record<string, number[]> | undefined): number[] => (s ? (Object.values(s)[0] ?? []) : []);
const prod = (xs: number[]): number => xs.reduce((a, b) => a * b, 1);

/** 2 M N K of a MatMul / Gemm / FusedMatMul from its first input's and its output's shapes (either A layout). */
export function matmulFlops(e: ProfileEvent): number {
  const a = dims(e.args?.input_type_shape?.[0]);
  const y = dims(e.args?.output_type_shape?.[0]);
  if (a.length < 2 || y.length < 2) return 0;
  const m = y[y.length - 2];
  const k = (a[a.length - 1] * a[a.length - 2]) / m;
  return 2 * prod(y) * k;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Aggregates the last `runs` model runs of a profile trace. Nodes are told apart by ORT's node index: below
 * `forwardNodes` is the forward, from there up to `graphNodes` the backward (the graph builder emits the
 * whole forward first), and a node ORT's optimiser created (index >= graphNodes) takes the phase of the node
 * that ran just before it. Each node's time is its median over the runs (robust to a preempted kernel).
 */
export function aggregateProfile(events: ProfileEvent[], forwardNodes: number, graphNodes: number, runs: number): ProfileAggregate {
  const modelRuns = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
  if (modelRuns.length < runs) throw new Error(`the profile holds ${modelRuns.length} model runs, fewer than the ${runs} asked for: run the session more times before ending profiling`);
  const kept = modelRuns.slice(-runs);
  const nodes = events.filter((e) => e.cat === 'Node' && e.args?.op_name && e.name.endsWith('_kernel_time')).sort((a, b) => a.ts - b.ts);
  const perNode = new Map<string, { op: string; phase: 'forward' | 'backward'; flops: number; durs: number[] }>();
  let nodesPerRun = 0;
  for (const r of kept) {
    const inRun = nodes.filter((e) => e.ts >= r.ts && e.ts <= r.ts + r.dur);
    nodesPerRun = Math.max(nodesPerRun, inRun.length);
    let phase: 'forward' | 'backward' = 'forward';
    for (const e of inRun) {
      const index = Number(e.args?.node_index);
      if (index < forwardNodes) phase = 'forward';
      else if (index < graphNodes) phase = 'backward';
      const key = e.name;
      const op = e.args?.op_name as string;
      const rec = perNode.get(key) ?? { op, phase, flops: OP_GROUPS.matmul.includes(op) ? matmulFlops(e) : 0, durs: [] };
      rec.durs.push(e.dur / 1000);
      perNode.set(key, rec);
    }
  }
  if (perNode.size === 0) throw new Error('the profile holds no node events: was the session created with enableProfiling?');
  const groups = new Map<string, GroupShare>();
  const ops = new Map<string, { op: string; group: string; nodes: number; ms: number; share: number }>();
  let nodeMs = 0;
  let forwardMs = 0;
  let mmFlops = 0;
  let nodeBestMs = 0;
  for (const rec of perNode.values()) {
    const ms = median(rec.durs);
    const best = Math.min(...rec.durs);
    const group = groupOf(rec.op);
    const g = groups.get(group) ?? { group, nodes: 0, ms: 0, bestMs: 0, forwardMs: 0, backwardMs: 0, share: 0 };
    g.nodes++;
    g.ms += ms;
    g.bestMs += best;
    nodeBestMs += best;
    if (rec.phase === 'forward') g.forwardMs += ms;
    else g.backwardMs += ms;
    groups.set(group, g);
    const o = ops.get(rec.op) ?? { op: rec.op, group, nodes: 0, ms: 0, share: 0 };
    o.nodes++;
    o.ms += ms;
    ops.set(rec.op, o);
    nodeMs += ms;
    if (rec.phase === 'forward') forwardMs += ms;
    mmFlops += rec.flops;
  }
  for (const g of groups.values()) g.share = g.ms / nodeMs;
  for (const o of ops.values()) o.share = o.ms / nodeMs;
  const order = [...Object.keys(OP_GROUPS), 'other'];
  const mm = groups.get('matmul');
  return {
    runs, runMs: median(kept.map((r) => r.dur / 1000)), nodeMs, nodeBestMs, nodesPerRun, forwardMs, backwardMs: nodeMs - forwardMs,
    groups: [...groups.values()].sort((a, b) => order.indexOf(a.group) - order.indexOf(b.group)),
    ops: [...ops.values()].sort((a, b) => b.ms - a.ms),
    matmul: { flops: mmFlops, ms: mm?.ms ?? 0, gflops: mm && mm.ms > 0 ? mmFlops / mm.ms / 1e6 : 0, bestMs: mm?.bestMs ?? 0, bestGflops: mm && mm.bestMs > 0 ? mmFlops / mm.bestMs / 1e6 : 0 },
  };
}

/** Nodes in a serialised ONNX model (ModelProto.graph = field 7, GraphProto.node = field 1). */
export function onnxNodeCount(bytes: Uint8Array): number {
  let count = 0;
  const walk = (start: number, end: number, onField: (field: number, from: number, to: number) => void): void => {
    let i = start;
    const varint = (): number => {
      let v = 0;
      let mul = 1;
      for (;;) {
        const b = bytes[i++];
        v += (b & 0x7f) * mul;
        if (b < 0x80) return v;
        mul *= 128;
      }
    };
    while (i < end) {
      const key = varint();
      const wire = key % 8;
      if (wire === 0) varint();
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else if (wire === 2) {
        const len = varint();
        onField(Math.floor(key / 8), i, i + len);
        i += len;
      } else throw new Error(`not an ONNX model: protobuf wire type ${wire} at byte ${i}`);
    }
  };
  walk(0, bytes.length, (f, a, b) => {
    if (f === 7) walk(a, b, (g) => (count += g === 1 ? 1 : 0));
  });
  return count;
}

/** Runs a session with ORT profiling on, `warmup` then `runs` times; returns the trace's events. */
export async function profileSession(bytes: Uint8Array, options: ort.InferenceSession.SessionOptions, feeds: Record<string, ort.Tensor>, warmup: number, runs: number): Promise<ProfileEvent[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'whale-ort-profile-'));
  try {
    const s = await ort.InferenceSession.create(bytes, { ...options, enableProfiling: true, profileFilePrefix: path.join(dir, 'p') });
    for (let i = 0; i < warmup + runs; i++) await s.run(feeds);
    s.endProfiling();
    await s.release();
    const file = readdirSync(dir).find((f) => f.endsWith('.json'));
    if (!file) throw new Error(`onnxruntime wrote no profile into ${dir}`);
    return JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as ProfileEvent[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The graph the trainer runs for a batch (as TrainerCore.step decides): with 2+ threads and rows below 512
 * tokens, or in deterministic mode, the rows split into `lanes` shares run at once, each a 'grad' graph on
 * one intra-op thread (from 512 tokens one row per share, `waves` rounds); otherwise one 'train' graph on
 * all threads.
 */
export function trainerGraphPlan(rows: number, seqLen: number, threads: number, deterministic: boolean): { mode: 'grad' | 'train'; rows: number; sessionThreads: number; lanes: number; waves: number; recompute: boolean } {
  const recompute = seqLen >= 512;
  if (threads >= 2 && rows >= 2 && (deterministic || seqLen < 512)) {
    const parts = seqLen >= 512 ? rows : Math.min(threads, rows);
    const lanes = Math.min(threads, parts);
    return { mode: 'grad', rows: Math.ceil(rows / parts), sessionThreads: 1, lanes, waves: Math.ceil(parts / lanes), recompute };
  }
  return { mode: 'train', rows, sessionThreads: deterministic ? 1 : threads, lanes: 1, waves: 1, recompute };
}

export interface TrainerProfile extends ProfileAggregate {
  preset: string;
  rows: number;
  seqLen: number;
  threads: number;
  plan: ReturnType<typeof trainerGraphPlan>;
  /** ORT's MatMul rate on the block shapes at the profiled session's threads (as the bench's reference). */
  matmulRefGflops: number;
  /** The bench's FLOP formula for the whole step, and the matmul FLOPs the graphs execute for it. */
  modelFlops: number;
  executedMatmulFlops: number;
  /** The largest matmul shapes by time. */
  matmulShapes: Array<{ op: string; shapes: string; nodes: number; ms: number; gflops: number }>;
}

export interface ProfileOptions { preset: PresetName; rows: number; seqLen: number; threads: number; deterministic?: boolean; runs?: number; warmup?: number }

/** Profiles the graph the trainer runs for `rows x seqLen` at `threads` (one share of it on the data-parallel path). */
export async function profileTrainer(o: ProfileOptions): Promise<TrainerProfile> {
  const c = modelConfig(o.preset);
  const plan = trainerGraphPlan(o.rows, o.seqLen, o.threads, o.deterministic ?? false);
  const graph = { rows: plan.rows, seqLen: o.seqLen, recomputeAttention: plan.recompute };
  const bytes = buildTrainGraph(c, { ...graph, mode: plan.mode });
  const forwardNodes = onnxNodeCount(buildTrainGraph(c, { ...graph, mode: 'loss' }));
  const P = paramLayout(c).total;
  const rng = new Xoshiro128(2);
  const shape = [plan.rows, o.seqLen];
  const ids = () => Int32Array.from({ length: plan.rows * o.seqLen }, () => rng.nextU32() % c.vocabSize);
  const feeds: Record<string, ort.Tensor> = {
    params: new ort.Tensor('float32', initParams(c, 1), [P]),
    tokens: new ort.Tensor('int32', ids(), shape),
    targets: new ort.Tensor('int32', ids(), shape),
    weights: new ort.Tensor('float32', new Float32Array(plan.rows * o.seqLen).fill(1), shape),
  };
  if (plan.mode === 'train') {
    Object.assign(feeds, { m: new ort.Tensor('float32', new Float32Array(P), [P]), v: new ort.Tensor('float32', new Float32Array(P), [P]), hyper: new ort.Tensor('float32', Float32Array.from([1e-4, 0, 0.9, 0.999, 1e-8, 0.1, 0.001, 1]), [8]) });
  }
  const runs = o.runs ?? 5;
  const events = await profileSession(bytes, sessionOptions({ threads: plan.sessionThreads, spinning: true }), feeds, o.warmup ?? 2, runs);
  const agg = aggregateProfile(events, forwardNodes, onnxNodeCount(bytes), runs);
  const matmulRefGflops = await configMatmulGflops(o.preset, plan.sessionThreads);
  const shapes = new Map<string, { op: string; shapes: string; nodes: number; ms: number; flops: number; durs: Map<string, number[]> }>();
  const lastRuns = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts).slice(-runs);
  for (const e of events) {
    const op = e.args?.op_name ?? '';
    if (e.cat !== 'Node' || !OP_GROUPS.matmul.includes(op) || !lastRuns.some((r) => e.ts >= r.ts && e.ts <= r.ts + r.dur)) continue;
    const sig = `${(e.args?.input_type_shape ?? []).slice(0, 2).map((s) => dims(s).join('x')).join(' @ ')} -> ${dims(e.args?.output_type_shape?.[0]).join('x')}`;
    const rec = shapes.get(op + sig) ?? { op, shapes: sig, nodes: 0, ms: 0, flops: matmulFlops(e), durs: new Map<string, number[]>() };
    rec.durs.set(e.name, [...(rec.durs.get(e.name) ?? []), e.dur / 1000]);
    shapes.set(op + sig, rec);
  }
  const matmulShapes = [...shapes.values()].map((r) => {
    const ms = [...r.durs.values()].reduce((a, d) => a + median(d), 0);
    return { op: r.op, shapes: r.shapes, nodes: r.durs.size, ms, gflops: (r.flops * r.durs.size) / ms / 1e6 };
  }).sort((a, b) => b.ms - a.ms);
  const tokens = o.rows * o.seqLen;
  return {
    ...agg, preset: o.preset, rows: o.rows, seqLen: o.seqLen, threads: o.threads, plan, matmulRefGflops,
    modelFlops: 3 * forwardFlopsPerToken(c, o.seqLen) * tokens, executedMatmulFlops: (agg.matmul.flops * tokens) / (plan.rows * o.seqLen),
    matmulShapes,
  };
}

/** The step as the bench measured it (median ms, its graph phase, and the MatMul reference of that run). */
export interface MeasuredStep { medianMs: number; graphMs: number; matmulGflops: number }

/**
 * Factors whose product is the bench's trainer / MatMul ratio: FLOPs counted vs executed, the matmul nodes'
 * rate vs the reference, the matmul share of the profiled graph, lanes running together vs one alone, and
 * the graph's share of the step.
 */
export function boundFactors(p: TrainerProfile, m: MeasuredStep): Array<{ factor: string; value: number }> {
  const lanes = p.plan.lanes;
  return [
    { factor: 'FLOPs the bench counts / matmul FLOPs the graphs execute', value: p.modelFlops / p.executedMatmulFlops },
    { factor: `matmul nodes' rate x ${lanes} lane(s) / the run's MatMul reference`, value: (p.matmul.gflops * lanes) / m.matmulGflops },
    { factor: 'matmul share of the graph\'s kernel time', value: p.matmul.ms / p.nodeMs },
    { factor: 'kernel time / graph run (executor overhead, preemption between kernels)', value: p.nodeMs / p.runMs },
    { factor: `profiled graph run x ${p.plan.waves} wave(s) / the step's graph phase (lanes at once, other load)`, value: (p.runMs * p.plan.waves) / m.graphMs },
    { factor: 'graph phase / whole step (combine + AdamW + transfer the rest)', value: m.graphMs / m.medianMs },
  ];
}

/**
 * trainer / MatMul if a step were only this graph's kernels at their fastest runs (no executor gaps, no other
 * lane or process in the way, no combine / AdamW), against the profile's own MatMul reference at the
 * session's threads: the matmul FLOPs' time at the reference over that kernel time. Self-contained, so a
 * disturbed reference elsewhere in the run does not move it.
 */
export function graphCeiling(p: TrainerProfile): number {
  return p.matmul.flops / p.matmulRefGflops / 1e6 / p.nodeBestMs;
}

export function formatTrainerProfile(p: TrainerProfile, measured?: MeasuredStep): string[] {
  const pl = p.plan;
  const pct = (x: number) => `${(100 * x).toFixed(1)} %`.padStart(7);
  const ms = (x: number) => `${x.toFixed(1)} ms`.padStart(10);
  const out = [
    `profiled graph: '${pl.mode}' on ${pl.rows}x${p.seqLen} at ${pl.sessionThreads} intra-op thread(s) (the trainer runs ${pl.lanes} at once${pl.waves > 1 ? `, ${pl.waves} waves` : ''} for ${p.rows}x${p.seqLen} at ${p.threads} threads); ORT session profiling, each node's median over ${p.runs} runs`,
    `run ${p.runMs.toFixed(1)} ms (median model_run); kernels ${p.nodeMs.toFixed(1)} ms (node medians; ${p.nodeBestMs.toFixed(1)} ms at each node's fastest run) in ${p.nodesPerRun} kernels; forward ${p.forwardMs.toFixed(1)} ms ${pct(p.forwardMs / p.nodeMs).trim()}, backward${pl.mode === 'train' ? ' (with the in-graph clip + AdamW)' : ''} ${p.backwardMs.toFixed(1)} ms ${pct(p.backwardMs / p.nodeMs).trim()}`,
    `${'op group'.padEnd(18)}${'nodes'.padStart(6)}${'time'.padStart(10)}${'share'.padStart(8)}${'forward'.padStart(10)}${'backward'.padStart(10)}${'fastest'.padStart(10)}${'share'.padStart(8)}`,
    ...p.groups.map((g) => `${g.group.padEnd(18)}${String(g.nodes).padStart(6)}${ms(g.ms)}${pct(g.share).padStart(8)}${ms(g.forwardMs)}${ms(g.backwardMs)}${ms(g.bestMs)}${pct(g.bestMs / p.nodeBestMs).padStart(8)}`),
    `largest ops: ${p.ops.slice(0, 8).map((o) => `${o.op} ${(100 * o.share).toFixed(1)} %`).join(', ')}`,
    `matmul nodes: ${(p.matmul.flops / 1e9).toFixed(2)} GFLOP per run in ${p.matmul.ms.toFixed(1)} ms = ${p.matmul.gflops.toFixed(1)} GFLOP/s (each node's fastest run: ${p.matmul.bestGflops.toFixed(1)}) vs ORT MatMul on the block shapes at ${pl.sessionThreads} thread(s) ${p.matmulRefGflops.toFixed(1)} GFLOP/s (${(p.matmul.gflops / p.matmulRefGflops).toFixed(2)})`,
    ...p.matmulShapes.slice(0, 6).map((s) => `  ${s.op} ${s.shapes}: ${s.nodes} nodes ${s.ms.toFixed(1)} ms, ${s.gflops.toFixed(1)} GFLOP/s`),
  ];
  if (measured) {
    const f = boundFactors(p, measured);
    out.push(`trainer / MatMul ${(measured.matmulGflops > 0 ? f.reduce((a, x) => a * x.value, 1) : 0).toFixed(2)} = the product of:`);
    for (const x of f) out.push(`  ${x.value.toFixed(2)}  ${x.factor}`);
  }
  const ceiling = graphCeiling(p);
  out.push(`graph ceiling ${ceiling.toFixed(2)}: the matmul FLOPs at the ${pl.sessionThreads}-thread MatMul reference over the kernels' fastest total (${p.nodeBestMs.toFixed(1)} ms): trainer / MatMul with every kernel undisturbed and nothing else in the step${measured ? `; x the graph's share of the step (${(measured.graphMs / measured.medianMs).toFixed(2)}) = ${((ceiling * measured.graphMs) / measured.medianMs).toFixed(2)}` : ''}`);
  return out;
}
