// Decoder checks: the transformers.js-layout KV-cache decoder and the sampler's fixed-slot step graph give
// the training graph's full-forward logits (<= 1e-4); sampling is seeded, shares prefill, and stops right.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ort from 'onnxruntime-node';
import { modelConfig } from '../../model/config';
import { buildHfDecoderGraph } from '../../model/graph/decoder-graph';
import { Xoshiro128 } from '../../common/xoshiro';
import { initParams } from '../../model/checkpoints/init-params';
import { OrtSampler } from '../../model/sampling/sampler';
import { buildTrainGraph } from '../../model/graph/training-graph';
import { encodeText, SPECIAL_TOKENS } from '../../model/tokenizer';
import type { GenerateRequest } from '../../model/backend';

const c = modelConfig('tiny');
const rng = new Xoshiro128(11);
// Scaled-up weights give peaked, position-dependent distributions, so mistakes show.
const params = Float32Array.from(initParams(c, 3), (x) => x * 6 + 0.02 * rng.normal());

/** Full-forward logits [T, V] from the training graph (an independent implementation of the model). */
async function fullLogits(tokens: number[]): Promise<Float32Array> {
  const T = tokens.length;
  const s = await ort.InferenceSession.create(buildTrainGraph(c, { rows: 1, seqLen: T, mode: 'loss', emitLogits: true }));
  const out = await s.run({
    params: new ort.Tensor('float32', params, [params.length]),
    tokens: new ort.Tensor('int32', Int32Array.from(tokens), [1, T]),
    targets: new ort.Tensor('int32', new Int32Array(T), [1, T]),
    weights: new ort.Tensor('float32', new Float32Array(T), [1, T]),
  });
  await s.release();
  return out.logits.data as Float32Array;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

void test('KV-cache decoder (transformers.js layout) matches the full forward, prefill and token by token', async () => {
  const tokens = encodeText('KV cache check: 12+7=19.').slice(0, 24);
  const T = tokens.length;
  const V = c.vocabSize;
  const ref = await fullLogits(tokens);
  const s = await ort.InferenceSession.create(buildHfDecoderGraph(c, params));
  const hd = c.dModel / c.nHeads;
  const i64 = (xs: number[]) => BigInt64Array.from(xs.map(BigInt));
  let past: Record<string, ort.Tensor> = {};
  for (let l = 0; l < c.nLayers; l++) for (const kv of ['key', 'value']) past[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [1, c.nHeads, 0, hd]);
  const prefix = 10;
  let worst = 0;
  for (let start = 0; start < T; ) {
    const end = start === 0 ? prefix : start + 1;
    const ids = tokens.slice(start, end);
    const out = await s.run({
      input_ids: new ort.Tensor('int64', i64(ids), [1, ids.length]),
      attention_mask: new ort.Tensor('int64', i64(Array(end).fill(1)), [1, end]),
      position_ids: new ort.Tensor('int64', i64(ids.map((_, i) => start + i)), [1, ids.length]),
      ...past,
    });
    worst = Math.max(worst, maxAbsDiff(out.logits.data as Float32Array, ref.subarray(start * V, end * V)));
    past = {};
    for (let l = 0; l < c.nLayers; l++) for (const kv of ['key', 'value']) past[`past_key_values.${l}.${kv}`] = out[`present.${l}.${kv}`];
    start = end;
  }
  console.log(`[kv-cache] transformers.js-layout decoder vs full forward: max |logit diff| ${worst.toExponential(2)}`);
  assert.ok(worst <= 1e-4, `decoder logits differ from the full forward by ${worst}`);
  await s.release();
});

void test('sampler (fixed-slot cache, mixed prompt lengths in one batch) reports the full-forward logprobs', async () => {
  const sampler = await OrtSampler.create(c, params, { threads: 1, maxBatchRows: 8 });
  const prompts = [encodeText('ab'), encodeText('a longer prompt here'), encodeText('ab'), encodeText('x')];
  const requests: GenerateRequest[] = prompts.map((p, i) => ({ promptTokens: p, maxNewTokens: 12 + 9 * i, temperature: 1, topK: 0, topP: 1, stopTokens: [], seed: 100 + i }));
  const results = await sampler.generate(requests);
  assert.equal(sampler.stats.prefilledPrompts, 3, 'identical prompts must share one prefill');
  assert.equal(sampler.stats.prefillRuns, 1, 'distinct prompts are prefilled in one padded batch');
  let worst = 0;
  for (let i = 0; i < requests.length; i++) {
    const r = results[i];
    assert.equal(r.tokens.length, requests[i].maxNewTokens);
    assert.equal(r.stopReason, 'max-new-tokens');
    const seq = [...prompts[i], ...r.tokens];
    const logits = await fullLogits(seq.slice(0, -1));
    for (let j = 0; j < r.tokens.length; j++) {
      const row = logits.subarray((prompts[i].length - 1 + j) * c.vocabSize, (prompts[i].length + j) * c.vocabSize);
      let max = -Infinity;
      for (const x of row) max = Math.max(max, x);
      let sum = 0;
      for (const x of row) sum += Math.exp(x - max);
      const lp = row[r.tokens[j]] - max - Math.log(sum);
      worst = Math.max(worst, Math.abs(lp - r.logprobs[j]));
    }
  }
  console.log(`[kv-cache] sampler logprobs vs full forward: max |diff| ${worst.toExponential(2)}`);
  assert.ok(worst <= 1e-4, `sampler logprobs differ from the full forward by ${worst}`);
  await sampler.close();
});

void test('sampling is seeded per request, and stops on tokens, strings, max tokens and a full context', async () => {
  const sampler = await OrtSampler.create(c, params, { threads: 1 });
  const base: GenerateRequest = { promptTokens: encodeText('hello'), maxNewTokens: 20, temperature: 1, topK: 20, topP: 0.9, stopTokens: [], seed: 5 };
  const [a, b, other] = await sampler.generate([base, { ...base }, { ...base, seed: 6 }]);
  assert.deepEqual(a.tokens, b.tokens, 'equal seeds and inputs must give equal samples');
  assert.notDeepEqual(a.tokens, other.tokens, 'different seeds should differ');
  const [again] = await sampler.generate([base]);
  assert.deepEqual(again.tokens, a.tokens, 'a request alone and in a batch must sample the same');
  const stopTok = a.tokens[3];
  const [st] = await sampler.generate([{ ...base, stopTokens: [stopTok] }]);
  assert.equal(st.stopReason, 'stop-token');
  assert.equal(st.tokens[st.tokens.length - 1], stopTok);
  assert.ok(st.tokens.length <= 4);
  const text = a.text;
  const needle = text.slice(2, 4);
  const [ss] = await sampler.generate([{ ...base, stopStrings: [needle] }]);
  assert.equal(ss.stopReason, 'stop-string');
  assert.ok(ss.text.endsWith(needle) && ss.text.length <= text.indexOf(needle) + needle.length);
  const long = Array(c.contextLength - 3).fill(SPECIAL_TOKENS.USER);
  const [full] = await sampler.generate([{ ...base, promptTokens: long }]);
  assert.equal(full.stopReason, 'context-full');
  assert.equal(full.tokens.length, 3);
  const [greedy1, greedy2] = await sampler.generate([{ ...base, temperature: 0, seed: 1 }, { ...base, temperature: 0, seed: 2 }]);
  assert.deepEqual(greedy1.tokens, greedy2.tokens, 'temperature 0 is greedy');
  await assert.rejects(sampler.generate([{ ...base, promptTokens: [] }]), /non-empty/);
  await sampler.close();
});

void test('generation runs off the main thread: timers keep firing during a batch', async () => {
  const big = modelConfig('embedded-1m');
  const sampler = await OrtSampler.create(big, initParams(big, 1), { threads: 1 });
  const reqs: GenerateRequest[] = Array.from({ length: 16 }, (_, i) => ({ promptTokens: encodeText(`prompt ${i}`), maxNewTokens: 64, temperature: 1, topK: 20, topP: 1, stopTokens: [], seed: i }));
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const started = performance.now();
  const out = await sampler.generate(reqs);
  const ms = performance.now() - started;
  clearInterval(timer);
  console.log(`[sampler] embedded-1m 16 x 64 tokens in ${ms.toFixed(0)} ms, ${ticks} timer ticks meanwhile`);
  assert.equal(out.length, 16);
  assert.ok(ticks >= Math.min(5, ms / 10), `only ${ticks} timer ticks during ${ms.toFixed(0)} ms of generation`);
  await sampler.close();
});
