// Inference graphs built from a parameter vector: the transformers.js-layout KV-cache decoder (dynamic
// shapes; used for prompt prefill and for export) and the sampler's single-token step graph, which reads a
// fixed-slot cache kept outside the graph and returns only the new position's K/V (no per-step cache copy).
import { ModelConfig, paramLayout } from '../config';
import { GraphBuilder } from './graph-builder';
import { A } from './onnx-proto';

const MASK_NEG = -1e9;
const GELU_C = Math.sqrt(2 / Math.PI);
const GELU_A = 0.044715;

interface Ctx {
  b: GraphBuilder;
  c: ModelConfig;
  w: (name: string) => string;
}

function weights(b: GraphBuilder, c: ModelConfig, params: Float32Array): Ctx['w'] {
  const layout = paramLayout(c);
  if (params.length !== layout.total) throw new Error(`parameter vector has ${params.length} values, config needs ${layout.total}`);
  for (const s of layout.specs) b.initializer(s.name, { type: 'float32', dims: s.shape, data: params.slice(s.offset, s.offset + s.size) });
  return (name) => {
    if (!layout.byName.has(name)) throw new Error(`no parameter ${name}`);
    return name;
  };
}

/** GPT-2 gelu_new as x * sigmoid(2c (x + a x^3)); identical function to the training graph's. */
function gelu(b: GraphBuilder, x: string): string {
  const x2 = b.op('Mul', [x, x]);
  const z = b.op('Mul', [x, b.op('Add', [b.op('Mul', [x2, b.constF(2 * GELU_A * GELU_C)]), b.constF(2 * GELU_C)])]);
  return b.op('Mul', [x, b.op('Sigmoid', [z])]);
}

function layerNorm(ctx: Ctx, x: string, prefix: string): string {
  return ctx.b.op('LayerNormalization', [x, ctx.w(prefix + '.weight'), ctx.w(prefix + '.bias')], { axis: A.i(-1), epsilon: A.f(ctx.c.layerNormEps) });
}

function dense(ctx: Ctx, x: string, prefix: string): string {
  return ctx.b.op('Add', [ctx.b.op('MatMul', [x, ctx.w(prefix + '.weight')]), ctx.w(prefix + '.bias')]);
}

function mlp(ctx: Ctx, x: string, l: number): string {
  const h = layerNorm(ctx, x, `h.${l}.ln_2`);
  return ctx.b.op('Add', [x, dense(ctx, gelu(ctx.b, dense(ctx, h, `h.${l}.mlp.c_fc`)), `h.${l}.mlp.c_proj`)]);
}

/**
 * The decoder transformers.js loads (optimum's gpt2 layout): input_ids, attention_mask, position_ids and
 * past_key_values.{i}.key/value [batch_size, heads, past_sequence_length, head_dim]; outputs logits and
 * present.{i}.key/value (past concatenated with the new positions).
 */
export function buildHfDecoderGraph(c: ModelConfig, params: Float32Array): Uint8Array {
  const b = new GraphBuilder('whale_gpt2_decoder', 'float32');
  const ctx: Ctx = { b, c, w: weights(b, c, params) };
  const d = c.dModel;
  const H = c.nHeads;
  const hd = d / H;
  b.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  b.input('attention_mask', 'int64', ['batch_size', 'total_sequence_length']);
  b.input('position_ids', 'int64', ['batch_size', 'sequence_length']);
  for (let l = 0; l < c.nLayers; l++) {
    for (const kv of ['key', 'value']) b.input(`past_key_values.${l}.${kv}`, 'float32', ['batch_size', H, 'past_sequence_length', hd]);
  }
  let x = b.op('Add', [b.op('Gather', [ctx.w('wte.weight'), 'input_ids'], { axis: A.i(0) }), b.op('Gather', [ctx.w('wpe.weight'), 'position_ids'], { axis: A.i(0) })]);
  // Additive mask [B, 1, T, S]: query i (absolute position past + i) sees key j <= past + i that is not padding.
  const seqLen = b.op('Gather', [b.op('Shape', ['input_ids']), b.constI64(1)], { axis: A.i(0) });
  const total = b.op('Gather', [b.op('Shape', ['attention_mask']), b.constI64(1)], { axis: A.i(0) });
  const past = b.op('Sub', [total, seqLen]);
  const rowPos = b.op('Unsqueeze', [b.op('Range', [past, total, b.constI64(1)]), b.constI64([1])]);
  const colPos = b.op('Unsqueeze', [b.op('Range', [b.constI64(0), total, b.constI64(1)]), b.constI64([0])]);
  const causal = b.op('LessOrEqual', [colPos, rowPos]);
  const keep = b.op('Unsqueeze', [b.op('Cast', ['attention_mask'], { to: A.i(9) }), b.constI64([1, 2])]);
  const bias = b.op('Where', [b.op('And', [causal, keep]), b.constF(0), b.constF(MASK_NEG)]);
  const scale = b.constF(1 / Math.sqrt(hd));
  const toHeads = (z: string) => b.op('Transpose', [b.op('Reshape', [z, b.constI64([0, 0, H, hd])])], { perm: A.ints([0, 2, 1, 3]) });
  for (let l = 0; l < c.nLayers; l++) {
    const h = layerNorm(ctx, x, `h.${l}.ln_1`);
    const [q, k, v] = b.nodeN('Split', [dense(ctx, h, `h.${l}.attn.c_attn`), b.constI64([d, d, d])], 3, { axis: A.i(2) });
    const kAll = b.op('Concat', [`past_key_values.${l}.key`, toHeads(k)], { axis: A.i(2) }, `present.${l}.key`);
    const vAll = b.op('Concat', [`past_key_values.${l}.value`, toHeads(v)], { axis: A.i(2) }, `present.${l}.value`);
    const scores = b.op('Add', [b.op('MatMul', [b.op('Mul', [toHeads(q), scale]), b.op('Transpose', [kAll], { perm: A.ints([0, 1, 3, 2]) })]), bias]);
    const y = b.op('MatMul', [b.op('Softmax', [scores], { axis: A.i(-1) }), vAll]);
    const merged = b.op('Reshape', [b.op('Transpose', [y], { perm: A.ints([0, 2, 1, 3]) }), b.constI64([0, 0, d])]);
    x = b.op('Add', [x, dense(ctx, merged, `h.${l}.attn.c_proj`)]);
    x = mlp(ctx, x, l);
  }
  const xf = layerNorm(ctx, x, 'ln_f');
  b.op('MatMul', [xf, b.op('Transpose', [ctx.w('wte.weight')], { perm: A.ints([1, 0]) })], {}, 'logits');
  b.output('logits', 'float32', ['batch_size', 'sequence_length', c.vocabSize]);
  for (let l = 0; l < c.nLayers; l++) {
    for (const kv of ['key', 'value']) b.output(`present.${l}.${kv}`, 'float32', ['batch_size', H, 'total_sequence_length', hd]);
  }
  return b.toBytes();
}

/**
 * One decode step for B rows at their own positions. Inputs: tokens/positions int32 [B], cache_bias [B, C]
 * (0 where a slot holds this row's past, -1e9 elsewhere), cache_key.{i} and cache_value.{i} [B, H, C, hd].
 * Outputs: logits [B, V] and new_kv [2 * layers * B, H, 1, hd] (layer i's
 * new K then its new V, [B, H, 1, hd] each) for the caller to store in slot pos: one output rather than
 * two per layer, as each output costs the binding a copy and a wrapper per run. This graph is internal (never exported), so it uses ORT's CPU contrib
 * ops to cut per-step op count: SkipLayerNormalization folds each residual add and projection bias into
 * the next LayerNorm, FastGelu is gelu_new with the fc bias, and q is pre-scaled in the weights.
 */
export function buildStepGraph(c: ModelConfig, params: Float32Array): Uint8Array {
  const b = new GraphBuilder('whale_gpt2_step', 'float32');
  const layout = paramLayout(c);
  const p = (name: string) => {
    const spec = layout.byName.get(name);
    if (!spec) throw new Error(`no parameter ${name}`);
    return params.subarray(spec.offset, spec.offset + spec.size);
  };
  const init = (name: string, dims: number[], data: Float32Array) => b.initializer(name, { type: 'float32', dims, data: data.slice() });
  const d = c.dModel;
  const H = c.nHeads;
  const hd = d / H;
  const ms = 'com.microsoft';
  b.input('tokens', 'int32', ['batch']);
  b.input('positions', 'int32', ['batch']);
  b.input('cache_bias', 'float32', ['batch', 'capacity']);
  for (let l = 0; l < c.nLayers; l++) {
    // Keys in the values' layout: q.K^T as a transposed-B FusedMatMul runs MLAS's one-row dot-product kernel
    // over contiguous slots (1m at 256 rows x 192 slots: ~2 ms vs ~4-10 ms for a plain MatMul on K^T).
    b.input(`cache_key.${l}`, 'float32', ['batch', H, 'capacity', hd]);
    b.input(`cache_value.${l}`, 'float32', ['batch', H, 'capacity', hd]);
  }
  const wte = init('wte', [c.vocabSize, d], p('wte.weight'));
  let x = b.op('Add', [b.op('Gather', [wte, 'tokens'], { axis: A.i(0) }), b.op('Gather', [init('wpe', [c.contextLength, d], p('wpe.weight')), 'positions'], { axis: A.i(0) })]);
  const bias = b.op('Unsqueeze', ['cache_bias', b.constI64([1, 2])]);
  const qkvHeads = b.constI64([-1, 3 * H, 1, hd]);
  const headSplit = b.constI64([H, H, H]);
  const newKv: string[] = [];
  const capacity = b.op('Gather', [b.op('Shape', ['cache_bias']), b.constI64([1])], { axis: A.i(0) });
  const splitSizes = b.op('Concat', [capacity, b.constI64([1])], { axis: A.i(0) });
  const eps = A.f(c.layerNormEps);
  // Residual branch output still to be added (with its bias) into x by the next SkipLayerNormalization.
  let pending: { branch: string; bias: string } | undefined;
  const norm = (prefix: string): string => {
    const g = init(`${prefix}.g`, [d], p(`${prefix}.weight`));
    const beta = init(`${prefix}.b`, [d], p(`${prefix}.bias`));
    if (!pending) return b.op('LayerNormalization', [x, g, beta], { axis: A.i(-1), epsilon: eps });
    const out = b.fresh('ln');
    const sum = b.fresh('resid');
    b.nodeN('SkipLayerNormalization', [x, pending.branch, g, beta, pending.bias], 4, { epsilon: eps }, [out, '', '', sum], ms);
    x = sum;
    pending = undefined;
    return out;
  };
  const scale = 1 / Math.sqrt(hd);
  for (let l = 0; l < c.nLayers; l++) {
    const pre = `h.${l}.`;
    const h = norm(pre + 'ln_1');
    const wq = p(pre + 'attn.c_attn.weight').slice();
    const bq = p(pre + 'attn.c_attn.bias').slice();
    for (let r = 0; r < d; r++) for (let j = 0; j < d; j++) wq[r * 3 * d + j] *= scale;
    for (let j = 0; j < d; j++) bq[j] *= scale;
    const qkv = b.op('Gemm', [h, init(pre + 'qkv.w', [d, 3 * d], wq), init(pre + 'qkv.b', [3 * d], bq)]);
    // [B, 3d] -> [B, 3H, 1, hd] -> q, k, v as [B, H, 1, hd] (one Reshape and one Split per layer).
    const [qh, kh, vh] = b.nodeN('Split', [b.op('Reshape', [qkv, qkvHeads]), headSplit], 3, { axis: A.i(1) });
    newKv.push(kh, vh);
    const [qk] = b.nodeN('FusedMatMul', [qh, `cache_key.${l}`], 1, { transB: A.i(1) }, undefined, ms);
    const cached = b.op('Add', [qk, bias]);
    const self = b.op('ReduceSum', [b.op('Mul', [qh, kh]), b.constI64([-1])], { keepdims: A.i(1) });
    const probs = b.op('Softmax', [b.op('Concat', [cached, self], { axis: A.i(-1) })], { axis: A.i(-1) });
    const [pCache, pSelf] = b.nodeN('Split', [probs, splitSizes], 2, { axis: A.i(-1) });
    const y = b.op('Add', [b.op('MatMul', [pCache, `cache_value.${l}`]), b.op('Mul', [pSelf, vh])]);
    const attnOut = b.op('MatMul', [b.op('Reshape', [y, b.constI64([-1, d])]), init(pre + 'proj.w', [d, d], p(pre + 'attn.c_proj.weight'))]);
    pending = { branch: attnOut, bias: init(pre + 'proj.b', [d], p(pre + 'attn.c_proj.bias')) };
    const h2 = norm(pre + 'ln_2');
    const u = b.op('MatMul', [h2, init(pre + 'fc.w', [d, 4 * d], p(pre + 'mlp.c_fc.weight'))]);
    const [f] = b.nodeN('FastGelu', [u, init(pre + 'fc.b', [4 * d], p(pre + 'mlp.c_fc.bias'))], 1, {}, undefined, ms);
    pending = { branch: b.op('MatMul', [f, init(pre + 'mp.w', [4 * d, d], p(pre + 'mlp.c_proj.weight'))]), bias: init(pre + 'mp.b', [d], p(pre + 'mlp.c_proj.bias')) };
  }
  const xf = norm('ln_f');
  b.op('Gemm', [xf, wte], { transB: A.i(1) }, 'logits');
  b.output('logits', 'float32', ['batch', c.vocabSize]);
  b.op('Concat', newKv, { axis: A.i(0) }, 'new_kv');
  b.output('new_kv', 'float32', ['rows', H, 1, hd]);
  return b.toBytes();
}
