// The trainer profile of `whale bench runtime --profile`: a real onnxruntime profile of the tiny model's
// training graph aggregated by op group and phase (the matmul FLOPs read from the trace's shapes must equal
// the bench's FLOP formula), the graph plan the trainer uses, and the aggregation on hand-made traces.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GraphBuilder } from '../../model/graph/graph-builder';
import { aggregateProfile, boundFactors, formatTrainerProfile, matmulFlops, onnxNodeCount, profileTrainer, trainerGraphPlan, graphCeiling, type ProfileEvent } from '../../bench/trainer-profile';

const node = (name: string, op: string, index: number, ts: number, dur: number, shapes?: { in: number[][]; out: number[][] }): ProfileEvent => ({
  cat: 'Node', name: `${name}_kernel_time`, ts, dur,
  args: { op_name: op, node_index: String(index), input_type_shape: shapes?.in.map((d) => ({ float: d })), output_type_shape: shapes?.out.map((d) => ({ float: d })) },
});
const run = (ts: number, dur: number): ProfileEvent => ({ cat: 'Session', name: 'model_run', ts, dur });

describe('trainer profile', () => {
  it('profiles the real training graph: shares sum to 100 %, phases split the kernel time, matmul FLOPs match the formula', async () => {
    const p = await profileTrainer({ preset: 'tiny', rows: 4, seqLen: 16, threads: 2, runs: 3, warmup: 1 });
    assert.deepEqual(p.plan, { mode: 'grad', rows: 2, sessionThreads: 1, lanes: 2, waves: 1, recompute: false });
    assert.equal(p.runs, 3);
    const shares = p.groups.reduce((a, g) => a + g.share, 0);
    assert.ok(Math.abs(shares - 1) < 1e-9, `group shares sum to ${shares}`);
    assert.ok(Math.abs(p.ops.reduce((a, o) => a + o.share, 0) - 1) < 1e-9);
    assert.ok(Math.abs(p.forwardMs + p.backwardMs - p.nodeMs) < 1e-9);
    assert.ok(p.nodeBestMs > 0 && p.nodeBestMs <= p.nodeMs + 1e-9);
    assert.ok(Math.abs(p.groups.reduce((a, g) => a + g.bestMs, 0) - p.nodeBestMs) < 1e-9);
    assert.ok(p.forwardMs > 0 && p.backwardMs > p.forwardMs * 0.5, `forward ${p.forwardMs} ms, backward ${p.backwardMs} ms`);
    assert.ok(p.nodesPerRun > 100, `${p.nodesPerRun} kernels per run`);
    for (const g of ['matmul', 'elementwise', 'layout copies', 'softmax', 'layernorm']) assert.ok(p.groups.some((x) => x.group === g && x.nodes > 0), `no ${g} nodes`);
    // Forward + backward execute exactly 3 x the forward's matmul FLOPs (full T x T attention, tied head).
    assert.ok(Math.abs(p.executedMatmulFlops / p.modelFlops - 1) < 1e-9, `executed ${p.executedMatmulFlops} vs formula ${p.modelFlops}`);
    assert.ok(p.matmul.gflops > 0 && p.matmul.bestGflops >= p.matmul.gflops && p.matmulRefGflops > 0);
    assert.ok(p.matmulShapes.length > 0 && p.matmulShapes.every((s) => s.gflops > 0));
    // The factors multiply to the step's trainer / MatMul ratio, whatever the step measured.
    const step = { medianMs: 40, graphMs: 31, matmulGflops: 70 };
    const product = boundFactors(p, step).reduce((a, f) => a * f.value, 1);
    const ratio = p.modelFlops / step.medianMs / 1e6 / step.matmulGflops;
    assert.ok(Math.abs(product / ratio - 1) < 1e-9, `product ${product} vs ratio ${ratio}`);
    const text = formatTrainerProfile(p, step).join('\n');
    assert.match(text, /^matmul +\d+ /m);
    assert.match(text, new RegExp(`trainer / MatMul ${ratio.toFixed(2)} = the product of`));
    // The ceiling: the matmul time at the profile's own reference over the kernels' fastest total, <= 1 + the
    // matmul nodes' own excess over the reference.
    const ceiling = graphCeiling(p);
    assert.ok(Math.abs(ceiling - (p.matmul.bestMs / p.nodeBestMs) * (p.matmul.bestGflops / p.matmulRefGflops)) < 1e-9);
    assert.match(text, new RegExp(`graph ceiling ${ceiling.toFixed(2)}: .* = ${((ceiling * 31) / 40).toFixed(2)}$`, 'm'));
  });

  it('profiles the one-graph step (1 thread: the fused AdamW graph) with the same FLOP count', async () => {
    const p = await profileTrainer({ preset: 'tiny', rows: 2, seqLen: 16, threads: 1, runs: 2, warmup: 1 });
    assert.deepEqual(p.plan, { mode: 'train', rows: 2, sessionThreads: 1, lanes: 1, waves: 1, recompute: false });
    assert.ok(Math.abs(p.executedMatmulFlops / p.modelFlops - 1) < 1e-9);
    assert.ok(Math.abs(p.groups.reduce((a, g) => a + g.share, 0) - 1) < 1e-9);
    assert.ok(p.groups.some((g) => g.group === 'reductions' && g.backwardMs > 0), 'the optimizer\'s norm reduction counts as backward');
  });

  it('follows the trainer: data-parallel 1-thread shares below 512 tokens and in deterministic mode, else one graph', () => {
    assert.deepEqual(trainerGraphPlan(32, 128, 2, false), { mode: 'grad', rows: 16, sessionThreads: 1, lanes: 2, waves: 1, recompute: false });
    assert.deepEqual(trainerGraphPlan(4, 1024, 2, false), { mode: 'train', rows: 4, sessionThreads: 2, lanes: 1, waves: 1, recompute: true });
    assert.deepEqual(trainerGraphPlan(4, 1024, 2, true), { mode: 'grad', rows: 1, sessionThreads: 1, lanes: 2, waves: 2, recompute: true });
    assert.deepEqual(trainerGraphPlan(32, 128, 1, false), { mode: 'train', rows: 32, sessionThreads: 1, lanes: 1, waves: 1, recompute: false });
    assert.deepEqual(trainerGraphPlan(1, 128, 2, false), { mode: 'train', rows: 1, sessionThreads: 2, lanes: 1, waves: 1, recompute: false });
  });

  it('aggregates the last runs by node median; an optimiser-made node takes the phase of the node before it', () => {
    const mm = { in: [[64, 8], [8, 4]], out: [[64, 4]] };
    const events: ProfileEvent[] = [run(0, 100), node('MatMul_0', 'MatMul', 0, 1, 99_000, mm)];
    // Three kept runs: forward nodes 0-1, backward 2-3 (graph of 4 nodes), a fused node (index 9) after node 2.
    for (const [t, slow] of [[1000, 1], [2000, 50], [3000, 1]]) {
      events.push(run(t, 200));
      events.push(node('MatMul_0', 'MatMul', 0, t + 1, 10 * slow, mm));
      events.push(node('Add_1', 'Add', 1, t + 20, 5));
      events.push(node('Transpose_2', 'Transpose', 2, t + 30, 4));
      events.push(node('Fused_9', 'FusedMatMul', 9, t + 40, 20, { in: [[2, 8, 16], [2, 16, 8]], out: [[2, 16, 8]] }));
      events.push(node('Mul_3', 'Mul', 3, t + 70, 1));
    }
    const a = aggregateProfile(events, 2, 4, 3);
    assert.equal(a.nodesPerRun, 5);
    assert.equal(a.runMs, 0.2);
    // Medians in ms: MatMul 0.01 (the 0.5 spike and the first run's 99 are out), Add 0.005, Transpose 0.004, fused 0.02, Mul 0.001.
    assert.ok(Math.abs(a.nodeMs - 0.04) < 1e-12, String(a.nodeMs));
    assert.ok(Math.abs(a.nodeBestMs - 0.04) < 1e-12, String(a.nodeBestMs)); // every node's fastest run is its median here
    assert.ok(Math.abs(a.forwardMs - 0.015) < 1e-12, String(a.forwardMs));
    assert.ok(Math.abs(a.backwardMs - 0.025) < 1e-12, String(a.backwardMs));
    const g = Object.fromEntries(a.groups.map((x) => [x.group, x]));
    assert.equal(g.matmul.nodes, 2);
    assert.ok(Math.abs(g.matmul.forwardMs - 0.01) < 1e-12 && Math.abs(g.matmul.backwardMs - 0.02) < 1e-12);
    assert.ok(Math.abs(g.matmul.share - 0.75) < 1e-12);
    assert.deepEqual(a.groups.map((x) => x.group), ['matmul', 'elementwise', 'layout copies']);
    // 2*64*8*4, plus the FusedMatMul with A stored [K, M] = [8, 16]: 2 * (2*16*8 outputs) * K, K = 8*16 / M.
    assert.equal(a.matmul.flops, 2 * 64 * 8 * 4 + 2 * 2 * 16 * 8 * 8);
    assert.throws(() => aggregateProfile(events, 2, 4, 5), /holds 4 model runs, fewer than the 5/);
    assert.throws(() => aggregateProfile([run(0, 1)], 2, 4, 1), /no node events/);
  });

  it('reads 2 M N K with A in either layout, and counts an ONNX model\'s nodes', () => {
    const e = (a: number[], y: number[]) => node('g', 'Gemm', 0, 0, 1, { in: [a, [1, 1]], out: [y] });
    assert.equal(matmulFlops(e([2048, 128], [2048, 512])), 2 * 2048 * 128 * 512);
    assert.equal(matmulFlops(e([2048, 128], [128, 512])), 2 * 128 * 2048 * 512); // transA: A is [K, M]
    assert.equal(matmulFlops(e([16, 4, 128, 32], [16, 4, 128, 128])), 2 * 16 * 4 * 128 * 128 * 32);
    const b = new GraphBuilder('count', 'float32');
    b.input('x', 'float32', [2, 2]);
    b.op('Relu', [b.op('Add', [b.op('Mul', ['x', b.constF(2)]), b.constF(1)])], {}, 'y');
    b.output('y', 'float32', [2, 2]);
    assert.equal(onnxNodeCount(b.toBytes()), 3);
    assert.throws(() => onnxNodeCount(Uint8Array.from([0x0f])), /not an ONNX model/);
  });
});
