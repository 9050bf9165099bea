// The training graph: flat params in, GPT-2 forward, per-token weighted cross-entropy, reverse-mode
// backward (autodiff.ts), global-norm clipping and AdamW, all in one ONNX graph per (rows, length).
// Modes: 'loss' (forward only, for finite differences), 'grad' (loss + flat gradient), 'train' (full step).
import { ModelConfig, paramLayout } from '../config';
import { FloatType, GraphBuilder } from './graph-builder';
import { A } from './onnx-proto';
import { Tape } from './autodiff';
import { attention, causalMask, mlp, weightedCrossEntropy } from './training-blocks';

export type TrainGraphMode = 'loss' | 'grad' | 'train';

export interface TrainGraphOptions {
  rows: number;
  seqLen: number;
  mode: TrainGraphMode;
  floatType?: FloatType;
  /**
   * Trade compute for memory at long contexts: attention probabilities and MLP activations are recomputed
   * in backward, and attention runs one batch row at a time.
   */
  recomputeAttention?: boolean;
  /** Also output the raw (unclipped) flat gradient in 'train' mode (tests compare AdamW against it). */
  emitGradient?: boolean;
  /** Also output the logits [rows * seqLen, vocab] (tests compare the decoders against them). */
  emitLogits?: boolean;
}

/** Order of the `hyper` input vector of a 'train' graph. */
export const HYPER_INDEX = { lr: 0, weightDecay: 1, beta1: 2, beta2: 3, eps: 4, biasCorr1: 5, biasCorr2: 6, clipNorm: 7 } as const;

/** Emits the GPT-2 forward on the tape; returns the loss value name and the parameter leaf names. */
function emitModelLoss(tape: Tape, c: ModelConfig, rows: number, t: number, recompute: boolean): { loss: string; leaves: string[]; logits: string } {
  const b = tape.b;
  const layout = paramLayout(c);
  const p = new Map<string, string>();
  for (const s of layout.specs) {
    const flat = b.op('Slice', ['params', b.constI64([s.offset]), b.constI64([s.offset + s.size])]);
    p.set(s.name, tape.leaf(b.op('Reshape', [flat, b.constI64(s.shape)]), s.shape, true));
  }
  const P = (name: string) => p.get(name) as string;
  const n = rows * t;
  const d = c.dModel;
  const hd = d / c.nHeads;
  const ids = b.op('Cast', ['tokens'], { to: A.i(7) });
  const targets = b.op('Reshape', [b.op('Cast', ['targets'], { to: A.i(7) }), b.constI64([n])]);
  const weights = b.op('Reshape', ['weights', b.constI64([n])]);
  const mask = causalMask(b, t);
  let x = tape.add(tape.gather(P('wte.weight'), ids, [rows, t]), tape.sliceRows(P('wpe.weight'), 0, t));
  x = tape.reshape(x, [n, d]);
  const heads = (z: string) => tape.transpose(tape.reshape(z, [rows, t, c.nHeads, hd]), [0, 2, 1, 3]);
  for (let l = 0; l < c.nLayers; l++) {
    const pre = `h.${l}.`;
    const h = tape.layerNorm(x, P(pre + 'ln_1.weight'), P(pre + 'ln_1.bias'), c.layerNormEps);
    const [q, k, v] = tape.split(tape.linear(h, P(pre + 'attn.c_attn.weight'), P(pre + 'attn.c_attn.bias')), 1, [d, d, d]);
    const y = attention(tape, heads(q), heads(k), heads(v), mask, { recompute, chunks: recompute ? rows : 1 });
    const merged = tape.reshape(tape.transpose(y, [0, 2, 1, 3]), [n, d]);
    x = tape.add(x, tape.linear(merged, P(pre + 'attn.c_proj.weight'), P(pre + 'attn.c_proj.bias')));
    const h2 = tape.layerNorm(x, P(pre + 'ln_2.weight'), P(pre + 'ln_2.bias'), c.layerNormEps);
    x = tape.add(x, mlp(tape, h2, [P(pre + 'mlp.c_fc.weight'), P(pre + 'mlp.c_fc.bias'), P(pre + 'mlp.c_proj.weight'), P(pre + 'mlp.c_proj.bias')], recompute));
  }
  const xf = tape.layerNorm(x, P('ln_f.weight'), P('ln_f.bias'), c.layerNormEps);
  const logits = tape.linear(xf, P('wte.weight'), undefined, true);
  return { loss: weightedCrossEntropy(tape, logits, targets, weights, c.vocabSize), leaves: layout.specs.map((s) => P(s.name)), logits };
}

/** In-graph AdamW (decoupled weight decay) with global-norm clipping over the flat gradient. */
function emitAdamW(b: GraphBuilder, grad: string, decayMask: string): void {
  const h = (i: number) => b.op('Gather', ['hyper', b.constI64(i)], { axis: A.i(0) });
  const [lr, wd, b1, b2, eps, bc1, bc2, clip] = [0, 1, 2, 3, 4, 5, 6, 7].map(h);
  const one = b.constF(1);
  const norm = b.op('Sqrt', [b.op('ReduceSum', [b.op('Mul', [grad, grad])], { keepdims: A.i(0) })], {}, 'grad_norm');
  const clipScale = b.op('Min', [one, b.op('Div', [clip, b.op('Add', [norm, b.constF(1e-6)])])]);
  const g = b.op('Mul', [grad, clipScale]);
  const m = b.op('Add', [b.op('Mul', ['m', b1]), b.op('Mul', [g, b.op('Sub', [one, b1])])], {}, 'm_out');
  const v = b.op('Add', [b.op('Mul', ['v', b2]), b.op('Mul', [b.op('Mul', [g, g]), b.op('Sub', [one, b2])])], {}, 'v_out');
  const upd = b.op('Div', [b.op('Div', [m, bc1]), b.op('Add', [b.op('Sqrt', [b.op('Div', [v, bc2])]), eps])]);
  const decay = b.op('Mul', [b.op('Mul', ['params', decayMask]), wd]);
  b.op('Sub', ['params', b.op('Mul', [lr, b.op('Add', [upd, decay])])], {}, 'params_out');
}

export function buildTrainGraph(c: ModelConfig, o: TrainGraphOptions): Uint8Array {
  const ft = o.floatType ?? 'float32';
  const b = new GraphBuilder(`whale_train_${o.mode}`, ft);
  const layout = paramLayout(c);
  const P = layout.total;
  b.input('params', ft, [P]);
  b.input('tokens', 'int32', [o.rows, o.seqLen]);
  b.input('targets', 'int32', [o.rows, o.seqLen]);
  b.input('weights', ft, [o.rows, o.seqLen]);
  const tape = new Tape(b, o.recomputeAttention ?? false);
  const { loss, leaves, logits } = emitModelLoss(tape, c, o.rows, o.seqLen, o.recomputeAttention ?? false);
  b.output(loss, ft, []);
  if (o.emitLogits) {
    b.op('Identity', [logits], {}, 'logits');
    b.output('logits', ft, [o.rows * o.seqLen, c.vocabSize]);
  }
  if (o.mode === 'loss') return b.toBytes();
  const grads = tape.backward(loss, leaves);
  const flat = leaves.map((leaf) => b.op('Reshape', [grads.get(leaf) as string, b.constI64([-1])]));
  const gradName = o.mode === 'grad' || o.emitGradient ? 'grad' : undefined;
  const grad = b.op('Concat', flat, { axis: A.i(0) }, gradName);
  if (o.mode === 'grad') {
    b.output('grad', ft, [P]);
    return b.toBytes();
  }
  emitOptimizerIO(b, c, grad);
  if (gradName) b.output('grad', ft, [P]);
  return b.toBytes();
}

function emitOptimizerIO(b: GraphBuilder, c: ModelConfig, grad: string): void {
  const layout = paramLayout(c);
  const P = layout.total;
  const ft = b.floatType;
  b.input('m', ft, [P]);
  b.input('v', ft, [P]);
  b.input('hyper', ft, [8]);
  const mask = new Array<number>(P).fill(0);
  for (const s of layout.specs) if (s.decay) mask.fill(1, s.offset, s.offset + s.size);
  const decayMask = b.initializer('decay_mask', { type: ft, dims: [P], data: b.floatArray(mask) });
  emitAdamW(b, grad, decayMask);
  b.output('grad_norm', ft, []);
  b.output('params_out', ft, [P]);
  b.output('m_out', ft, [P]);
  b.output('v_out', ft, [P]);
}

/**
 * The optimizer alone, for data-parallel steps: grad = c1 * grad_a + c2 * grad_b (each half's gradient
 * weighted by its share of the batch's loss weight), then clipping and AdamW as in the 'train' graph.
 */
export function buildAdamWGraph(c: ModelConfig): Uint8Array {
  const b = new GraphBuilder('whale_adamw', 'float32');
  const P = paramLayout(c).total;
  b.input('params', 'float32', [P]);
  b.input('grad_a', 'float32', [P]);
  b.input('grad_b', 'float32', [P]);
  b.input('shares', 'float32', [2]);
  const share = (i: number) => b.op('Gather', ['shares', b.constI64(i)], { axis: A.i(0) });
  const grad = b.op('Add', [b.op('Mul', ['grad_a', share(0)]), b.op('Mul', ['grad_b', share(1)])]);
  emitOptimizerIO(b, c, grad);
  return b.toBytes();
}
