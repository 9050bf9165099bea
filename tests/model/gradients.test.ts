// Gradient checks for the generated training graph: float64 analytic vs central finite differences over
// every parameter, float32 (full ORT optimisation) vs float64, zero-weight tokens, and in-graph AdamW.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ort from 'onnxruntime-node';
import { modelConfig, ModelConfig, paramLayout } from '../../model/config';
import { Xoshiro128 } from '../../common/xoshiro';
import { initParams } from '../../model/checkpoints/init-params';
import { buildTrainGraph, HYPER_INDEX } from '../../model/graph/training-graph';

type F = Float32Array | Float64Array;
interface Batch { rows: number; seqLen: number; tokens: Int32Array; targets: Int32Array; weights: number[] }

function makeBatch(rows: number, seqLen: number, seed: number): Batch {
  const rng = new Xoshiro128(seed);
  const n = rows * seqLen;
  const tokens = Int32Array.from({ length: n }, () => rng.nextU32() % 264);
  const targets = Int32Array.from({ length: n }, () => rng.nextU32() % 264);
  // Mixed weights: zeros (prompt/pad), ones and fractional values.
  const weights = Array.from({ length: n }, (_, i) => [0, 1, 0.5, 1, 0][i % 5]);
  return { rows, seqLen, tokens, targets, weights };
}

/** Params with non-trivial biases and gains, so no gradient is zero by symmetry. */
function perturbedParams(c: ModelConfig, seed: number): Float64Array {
  const rng = new Xoshiro128(seed);
  return Float64Array.from(initParams(c, seed), (x) => x * 4 + 0.05 * rng.normal());
}

async function session(c: ModelConfig, b: Batch, mode: 'loss' | 'grad', floatType: 'float32' | 'float64', optimization: 'disabled' | 'all', recomputeAttention = false) {
  const bytes = buildTrainGraph(c, { rows: b.rows, seqLen: b.seqLen, mode, floatType, recomputeAttention });
  return ort.InferenceSession.create(bytes, { graphOptimizationLevel: optimization, intraOpNumThreads: 1, interOpNumThreads: 1 });
}

function feeds(b: Batch, params: F) {
  const f64 = params instanceof Float64Array;
  const shape = [b.rows, b.seqLen];
  return {
    params: new ort.Tensor(f64 ? 'float64' : 'float32', params, [params.length]),
    tokens: new ort.Tensor('int32', b.tokens, shape),
    targets: new ort.Tensor('int32', b.targets, shape),
    weights: f64 ? new ort.Tensor('float64', Float64Array.from(b.weights), shape) : new ort.Tensor('float32', Float32Array.from(b.weights), shape),
  };
}

function relErrPerTensor(c: ModelConfig, ref: ArrayLike<number>, got: ArrayLike<number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of paramLayout(c).specs) {
    let num = 0;
    let diff = 0;
    for (let i = s.offset; i < s.offset + s.size; i++) {
      num += ref[i] ** 2;
      diff += (ref[i] - got[i]) ** 2;
    }
    out.set(s.name, num === 0 ? Math.sqrt(diff) : Math.sqrt(diff / num));
  }
  return out;
}

const small = modelConfig({ contextLength: 16, dModel: 16, nLayers: 2, nHeads: 2 });

for (const recompute of [false, true]) {
  const variant = recompute ? ' (long-context graph: recomputed attention and MLP, per-row attention chunks)' : '';
  void test(`float64 gradients match central finite differences for every parameter tensor (<= 1e-5)${variant}`, async () => {
    const b = makeBatch(2, 8, 1);
    const params = perturbedParams(small, 2);
    const gradS = await session(small, b, 'grad', 'float64', 'disabled', recompute);
    const lossS = await session(small, b, 'loss', 'float64', 'disabled');
    const analytic = (await gradS.run(feeds(b, params))).grad.data as Float64Array;
    const numeric = new Float64Array(params.length);
    const h = 1e-5;
    const q = Float64Array.from(params);
    for (let i = 0; i < params.length; i++) {
      q[i] = params[i] + h;
      const lp = Number((await lossS.run(feeds(b, q))).loss.data[0]);
      q[i] = params[i] - h;
      const lm = Number((await lossS.run(feeds(b, q))).loss.data[0]);
      q[i] = params[i];
      numeric[i] = (lp - lm) / (2 * h);
    }
    const errs = relErrPerTensor(small, numeric, analytic);
    const worst = Math.max(...errs.values());
    console.log(`[grad-check] float64 vs finite differences${variant}: ${errs.size} tensors, ${params.length} params, worst relative error ${worst.toExponential(2)}`);
    for (const [name, e] of errs) assert.ok(e <= 1e-5, `${name}: relative error ${e} > 1e-5`);
    await gradS.release();
    await lossS.release();
  });
}

void test('float32 graph with full ORT optimisation matches the float64 gradient (<= 1e-4)', async () => {
  const c = modelConfig('tiny');
  const b = makeBatch(3, 32, 3);
  const p64 = perturbedParams(c, 4);
  const s64 = await session(c, b, 'grad', 'float64', 'disabled');
  const g64 = (await s64.run(feeds(b, p64))).grad.data as Float64Array;
  for (const recompute of [false, true]) {
    const s32 = await session(c, b, 'grad', 'float32', 'all', recompute);
    const g32 = (await s32.run(feeds(b, Float32Array.from(p64)))).grad.data as Float32Array;
    const errs = relErrPerTensor(c, g64, g32);
    const worst = Math.max(...errs.values());
    console.log(`[grad-check] float32 (ORT 'all', recomputeAttention=${recompute}) vs float64: worst relative error ${worst.toExponential(2)}`);
    for (const [name, e] of errs) assert.ok(e <= 1e-4, `${name}: relative error ${e} > 1e-4`);
    await s32.release();
  }
  await s64.release();
});

void test('tokens with loss weight 0 contribute exactly zero gradient', async () => {
  const c = modelConfig('tiny');
  const b = makeBatch(2, 32, 5);
  // Row 1: weights end at position 20, so positions 21.. are padding.
  for (let i = 21; i < 32; i++) b.weights[32 + i] = 0;
  const s = await session(c, b, 'grad', 'float32', 'all');
  const params = Float32Array.from(perturbedParams(c, 6));
  const base = (await s.run(feeds(b, params))).grad.data as Float32Array;
  const changed: Batch = { ...b, tokens: b.tokens.slice(), targets: b.targets.slice() };
  let edits = 0;
  for (let i = 0; i < changed.targets.length; i++) {
    if (b.weights[i] !== 0) continue;
    changed.targets[i] = (changed.targets[i] + 17) % 264; // a zero-weight target may be anything
    edits++;
  }
  for (let i = 22; i < 32; i++) changed.tokens[32 + i] = (changed.tokens[32 + i] + 5) % 264; // padding after the last target
  const after = (await s.run(feeds(changed, params))).grad.data as Float32Array;
  assert.ok(edits > 10);
  assert.deepEqual(after, base, 'gradient changed when only zero-weight targets and trailing padding changed');
  const none = (await s.run(feeds({ ...b, weights: b.weights.map(() => 0) }, params))).grad.data as Float32Array;
  assert.ok(none.every((x) => x === 0), 'all-zero weights must give an all-zero gradient');
  await s.release();
});

void test('in-graph AdamW with clipping matches a float64 reference over 3 steps', async () => {
  const c = modelConfig('tiny');
  const b = makeBatch(2, 16, 7);
  const P = paramLayout(c).total;
  const s = await ort.InferenceSession.create(buildTrainGraph(c, { rows: 2, seqLen: 16, mode: 'train', emitGradient: true }), { graphOptimizationLevel: 'all', intraOpNumThreads: 1 });
  const hyper = { lr: 3e-3, wd: 0.1, b1: 0.9, b2: 0.95, eps: 1e-8, clip: 0.5 };
  const decay = new Float64Array(P);
  for (const sp of paramLayout(c).specs) if (sp.decay) decay.fill(1, sp.offset, sp.offset + sp.size);
  let p: Float32Array = initParams(c, 8);
  let m: Float32Array = new Float32Array(P);
  let v: Float32Array = new Float32Array(P);
  for (let t = 1; t <= 3; t++) {
    const h = new Float32Array(8);
    Object.assign(h, { [HYPER_INDEX.lr]: hyper.lr, [HYPER_INDEX.weightDecay]: hyper.wd, [HYPER_INDEX.beta1]: hyper.b1, [HYPER_INDEX.beta2]: hyper.b2, [HYPER_INDEX.eps]: hyper.eps, [HYPER_INDEX.biasCorr1]: 1 - hyper.b1 ** t, [HYPER_INDEX.biasCorr2]: 1 - hyper.b2 ** t, [HYPER_INDEX.clipNorm]: hyper.clip });
    const out = await s.run({ ...feeds(b, p), m: new ort.Tensor('float32', m, [P]), v: new ort.Tensor('float32', v, [P]), hyper: new ort.Tensor('float32', h, [8]) });
    const g = out.grad.data as Float32Array;
    let norm = 0;
    for (const x of g) norm += x * x;
    norm = Math.sqrt(norm);
    assert.ok(Math.abs(Number(out.grad_norm.data[0]) - norm) <= 1e-5 * norm);
    assert.ok(norm > hyper.clip, 'the test should exercise clipping');
    const scale = Math.min(1, hyper.clip / (norm + 1e-6));
    const refP = new Float64Array(P);
    const refM = new Float64Array(P);
    const refV = new Float64Array(P);
    let updNorm = 0;
    let errNorm = 0;
    for (let i = 0; i < P; i++) {
      const gi = g[i] * scale;
      refM[i] = hyper.b1 * m[i] + (1 - hyper.b1) * gi;
      refV[i] = hyper.b2 * v[i] + (1 - hyper.b2) * gi * gi;
      const upd = refM[i] / (1 - hyper.b1 ** t) / (Math.sqrt(refV[i] / (1 - hyper.b2 ** t)) + hyper.eps);
      refP[i] = p[i] - hyper.lr * (upd + hyper.wd * decay[i] * p[i]);
      updNorm += (refP[i] - p[i]) ** 2;
      errNorm += (refP[i] - (out.params_out.data as Float32Array)[i]) ** 2;
    }
    const rel = Math.sqrt(errNorm / updNorm);
    const mErr = maxRel(refM, out.m_out.data as Float32Array);
    const vErr = maxRel(refV, out.v_out.data as Float32Array);
    console.log(`[adamw] step ${t}: update relative error ${rel.toExponential(2)}, m ${mErr.toExponential(2)}, v ${vErr.toExponential(2)}`);
    assert.ok(rel <= 1e-3, `step ${t}: parameter update differs from the reference by ${rel} (relative to the update)`);
    assert.ok(mErr <= 1e-5 && vErr <= 1e-5, `step ${t}: moments differ (m ${mErr}, v ${vErr})`);
    p = out.params_out.data as Float32Array;
    m = out.m_out.data as Float32Array;
    v = out.v_out.data as Float32Array;
  }
  await s.release();
});

function maxRel(ref: Float64Array, got: Float32Array): number {
  let num = 0;
  let diff = 0;
  for (let i = 0; i < ref.length; i++) {
    num += ref[i] ** 2;
    diff += (ref[i] - got[i]) ** 2;
  }
  return Math.sqrt(diff / num);
}
