// Composite training ops with hand-written backward rules: causal attention (softmax Jacobian folded,
// optional recompute and per-row chunking), the GPT-2 MLP (optional activation recompute) and the
// per-token weighted cross-entropy.
import { A } from './onnx-proto';
import { GraphBuilder } from './graph-builder';
import { Tape } from './autodiff';

const GELU_C = Math.sqrt(2 / Math.PI);
const GELU_A = 0.044715;

const MASK_NEG = -1e9;

export function causalMask(b: GraphBuilder, t: number): string {
  const data = new Array<number>(t * t);
  for (let i = 0; i < t; i++) for (let j = 0; j < t; j++) data[i * t + j] = j <= i ? 0 : MASK_NEG;
  return b.initializer(b.fresh('causal_mask'), { type: b.floatType, dims: [t, t], data: b.floatArray(data) });
}

export interface AttentionOptions {
  recompute: boolean;
  chunks: number;
  /** Chunked backward: a scalar 0 computed from the previous chunk's gradients (keeps chunks sequential). */
  barrier?: { zero?: string };
}

/** Scaled causal self-attention on [B, H, T, hd] with a hand-written backward (softmax Jacobian folded). */
export function attention(tape: Tape, q: string, k: string, v: string, mask: string, o: AttentionOptions): string {
  if (o.chunks > 1) {
    // One batch row at a time keeps a single T x T score matrix alive instead of B of them.
    const n = tape.shape(q)[0];
    const sizes = Array.from({ length: o.chunks }, (_, i) => Math.floor((n * (i + 1)) / o.chunks) - Math.floor((n * i) / o.chunks));
    const [qs, ks, vs] = [q, k, v].map((x) => tape.split(x, 0, sizes));
    const barrier = {};
    return tape.concat(qs.map((qi, i) => attention(tape, qi, ks[i], vs[i], mask, { recompute: o.recompute, chunks: 1, barrier })), 0);
  }
  const recompute = o.recompute;
  const b = tape.b;
  const shape = tape.shape(q);
  const scale = b.constF(1 / Math.sqrt(shape[3]));
  const swap = { perm: A.ints([0, 1, 3, 2]) };
  const qs = b.op('Mul', [q, scale]);
  const probs = b.op('Softmax', [b.op('Add', [b.op('MatMul', [qs, b.op('Transpose', [k], swap)]), mask])], { axis: A.i(-1) });
  const y = b.op('MatMul', [probs, v]);
  tape.recordComposite([q, k, v], [y], [shape], ([gy]) => {
    if (!gy) return [];
    // Recomputing from a differently-shaped expression keeps ORT's common-subexpression pass from merging it
    // back into the forward (which would keep every layer's T x T probabilities alive).
    // Chunks must also run one after another, or ORT may recompute every chunk's T x T matrices first.
    const after = o.barrier?.zero ? b.op('Add', [tape.zeroAfter([gy, 4]), o.barrier.zero]) : tape.zeroAfter([gy, 4]);
    const p = recompute
      ? b.op('Softmax', [b.op('Add', [b.op('MatMul', [q, b.op('Transpose', [b.op('Mul', [k, b.op('Add', [scale, after])])], swap)]), mask])], { axis: A.i(-1) })
      : probs;
    // gv = p^T gy and gk = ds^T qs are computed transposed (gy^T p, qs^T ds): transposing the small
    // [T, hd] operands and results is cheaper than a MatMul that repacks the T x T matrix (measured ~2x).
    const gv = b.op('Transpose', [b.op('MatMul', [b.op('Transpose', [gy], swap), p])], swap);
    const dp = b.op('MatMul', [gy, b.op('Transpose', [v], swap)]);
    // sum_j p_ij dp_ij = gy_i . y_i: a reduction over head_dim instead of over the T x T matrix.
    const rowDot = b.op('ReduceSum', [b.op('Mul', [gy, y]), b.constI64([-1])], { keepdims: A.i(1) });
    const ds = b.op('Mul', [p, b.op('Sub', [dp, rowDot])]);
    const gq = b.op('Mul', [b.op('MatMul', [ds, k]), scale]);
    const gk = b.op('Transpose', [b.op('MatMul', [b.op('Transpose', [qs], swap), ds])], swap);
    if (o.barrier) o.barrier.zero = tape.zeroAfter([gq, 4], [gk, 4], [gv, 4]);
    return [gq, gk, gv];
  });
  return y;
}

/** loss = sum_i w_i * nll_i / sum_i w_i over logits [N, V]; zero-weight rows get exactly zero gradient. */
export function weightedCrossEntropy(tape: Tape, logits: string, targets64: string, weights: string, vocab: number): string {
  const b = tape.b;
  const logp = b.op('LogSoftmax', [logits], { axis: A.i(1) });
  const classes = b.constI64(Array.from({ length: vocab }, (_, i) => i), [1, vocab]);
  const eq = b.op('Equal', [b.op('Unsqueeze', [targets64, b.constI64([1])]), classes]);
  const onehot = b.op('Cast', [eq], { to: A.i(b.floatType === 'float64' ? 11 : 1) });
  const nll = b.op('Neg', [b.op('ReduceSum', [b.op('Mul', [logp, onehot]), b.constI64([1])], { keepdims: A.i(0) })]);
  const denom = b.op('Max', [b.op('ReduceSum', [weights], { keepdims: A.i(0) }), b.constF(1e-12)]);
  const coef = b.op('Div', [weights, denom]);
  const loss = b.op('ReduceSum', [b.op('Mul', [nll, coef])], { keepdims: A.i(0) }, 'loss');
  tape.recordComposite([logits], [loss], [[]], ([gl]) => {
    if (!gl) return [];
    const rowScale = b.op('Unsqueeze', [b.op('Mul', [coef, gl]), b.constI64([1])]);
    return [b.op('Mul', [b.op('Sub', [b.op('Exp', [logp]), onehot]), rowScale])];
  });
  return loss;
}


/**
 * GPT-2 MLP: c_proj(gelu_new(c_fc(h))), gelu_new(u) = u * sigmoid(u (2c + 2ac u^2)). With `recompute`,
 * only u is kept for backward: sigmoid and the activation are rebuilt from it (in a differently ordered
 * expression, so ORT's common-subexpression pass cannot fold them back into the forward).
 */
export function mlp(tape: Tape, h: string, [wFc, bFc, wProj, bProj]: string[], recompute: boolean): string {
  const b = tape.b;
  const [n] = tape.shape(h);
  const [d] = tape.shape(wFc);
  const k1 = 2 * GELU_A * GELU_C;
  const k2 = 2 * GELU_C;
  const u = b.op('Gemm', [h, wFc, bFc]);
  const u2 = b.op('Mul', [u, u]);
  const s = b.op('Sigmoid', [b.op('Mul', [u, b.op('Add', [b.op('Mul', [u2, b.constF(k1)]), b.constF(k2)])])]);
  const f = b.op('Mul', [u, s]);
  const out = b.op('Gemm', [f, wProj, bProj]);
  tape.recordComposite([h, wFc, bFc, wProj, bProj], [out], [[n, d]], ([gy]) => {
    if (!gy) return [];
    const uk = recompute ? b.op('Mul', [u, b.op('Add', [b.constF(k1), tape.zeroAfter([gy, 2])])]) : undefined;
    const sR = uk ? b.op('Sigmoid', [b.op('Mul', [b.op('Add', [b.op('Mul', [uk, u]), b.constF(k2)]), u])]) : s;
    const fR = recompute ? b.op('Mul', [sR, u]) : f;
    const dz = uk ? b.op('Add', [b.op('Mul', [b.op('Mul', [uk, b.constF(3)]), u]), b.constF(k2)]) : b.op('Add', [b.op('Mul', [u2, b.constF(3 * k1)]), b.constF(k2)]);
    const gWProj = b.op('Gemm', [fR, gy], { transA: A.i(1) });
    const gbProj = b.op('ReduceSum', [gy, b.constI64([0])], { keepdims: A.i(0) });
    const gf = b.op('Gemm', [gy, wProj, ...tape.orderAfter([gWProj, 2], [gbProj, 1])], { transB: A.i(1) });
    // d gelu/du = s (1 + u (1 - s) dz/du)
    const slope = b.op('Mul', [sR, b.op('Add', [b.op('Mul', [b.op('Mul', [u, b.op('Sub', [b.constF(1), sR])]), dz]), b.constF(1)])]);
    const gu = b.op('Mul', [gf, slope]);
    const gWFc = b.op('Gemm', [h, gu], { transA: A.i(1) });
    const gbFc = b.op('ReduceSum', [gu, b.constI64([0])], { keepdims: A.i(0) });
    const gh = b.op('Gemm', [gu, wFc, ...tape.orderAfter([gWFc, 2], [gbFc, 1])], { transB: A.i(1) });
    return [gh, gWFc, gbFc, gWProj, gbProj];
  });
  return out;
}
