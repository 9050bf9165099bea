// Unit tests of per-token sampling and batch packing: top-k and top-p restrict the support, temperature
// sharpens, frequencies follow the softmax, logprobs are the raw model's, and packing pads to buckets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { modelConfig, bucketLength } from '../../model/config';
import { Xoshiro128 } from '../../common/xoshiro';
import { sampleToken } from '../../model/sampling/token-sampling';
import { bucketRows, packBatch } from '../../model/training/trainer';

const logits = Float32Array.from([2, 1, 0.5, 0, -1, 3]); // ranks: 5, 0, 1, 2, 3, 4
const scratch = { ids: new Int32Array(6), probs: new Float64Array(6) };
const lse = Math.log(Array.from(logits).reduce((a, x) => a + Math.exp(x), 0));

function histogram(p: { temperature: number; topK: number; topP: number }, n = 20000): number[] {
  const rng = new Xoshiro128(42);
  const counts = new Array(6).fill(0);
  for (let i = 0; i < n; i++) {
    const s = sampleToken(logits, 0, 6, p, rng, scratch);
    assert.ok(Math.abs(s.logprob - (logits[s.token] - lse)) < 1e-9, 'logprob must be the raw log-softmax');
    counts[s.token]++;
  }
  return counts.map((c) => c / n);
}

void test('plain sampling follows the softmax', () => {
  const freq = histogram({ temperature: 1, topK: 0, topP: 1 });
  for (let i = 0; i < 6; i++) assert.ok(Math.abs(freq[i] - Math.exp(logits[i] - lse)) < 0.015, `token ${i}: ${freq[i]}`);
});

void test('top-k keeps only the k most likely tokens, renormalised', () => {
  const freq = histogram({ temperature: 1, topK: 2, topP: 1 });
  assert.deepEqual(freq.map((f, i) => (f > 0 ? i : -1)).filter((i) => i >= 0), [0, 5]);
  const expected5 = Math.exp(3) / (Math.exp(3) + Math.exp(2));
  assert.ok(Math.abs(freq[5] - expected5) < 0.015);
});

void test('top-p keeps the smallest prefix reaching the mass', () => {
  const p5 = Math.exp(3 - lse);
  const freq = histogram({ temperature: 1, topK: 0, topP: p5 + 0.01 }); // needs tokens 5 and 0
  assert.deepEqual(freq.map((f, i) => (f > 0 ? i : -1)).filter((i) => i >= 0), [0, 5]);
  const only = histogram({ temperature: 1, topK: 0, topP: p5 - 0.01 }, 200);
  assert.equal(only[5], 1);
});

void test('temperature sharpens and 0 is greedy', () => {
  const cold = histogram({ temperature: 0.25, topK: 0, topP: 1 });
  assert.ok(cold[5] > 0.97);
  const greedy = histogram({ temperature: 0, topK: 0, topP: 1 }, 100);
  assert.equal(greedy[5], 1);
});

void test('packBatch shifts targets, pads to the bucket with zero weight', () => {
  const c = modelConfig('embedded-1m');
  assert.equal(bucketLength(1, 1024), 128);
  assert.equal(bucketLength(129, 1024), 256);
  assert.equal(bucketLength(1000, 1024), 1024);
  const p = packBatch(c, { tokens: [[10, 11, 12], Array(200).fill(7)], lossWeights: [[0, 1, 0.5], Array(200).fill(1)] });
  assert.equal(p.seqLen, 256);
  assert.deepEqual(Array.from(p.tokens.subarray(0, 3)), [10, 11, 262]);
  assert.deepEqual(Array.from(p.targets.subarray(0, 3)), [11, 12, 262]);
  assert.deepEqual(Array.from(p.weights.subarray(0, 3)), [1, 0.5, 0]);
  assert.equal(p.count, 2 + 199);
  assert.deepEqual([1, 2, 3, 5, 8, 9, 17, 32].map(bucketRows), [1, 2, 4, 8, 8, 16, 24, 32]);
  const three = packBatch(c, { tokens: [[1, 2], [3, 4], [5, 6]], lossWeights: [[1, 1], [1, 1], [1, 1]] });
  assert.equal(three.rows, 4, 'rows are padded to a row bucket');
  assert.ok(three.weights.subarray(3 * 128).every((w) => w === 0), 'padding rows carry zero weight');
  assert.equal(p.weighted, 2 + 199);
});
