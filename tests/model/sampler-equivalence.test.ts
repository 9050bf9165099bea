// The sampler's tokens for fixed seeds are pinned: a mixed workload (shared and distinct prompts, several
// lengths, cache growth past two 64-slot rounds, stop tokens that compact the batch, two waves, greedy,
// top-k and top-p rows) must give the committed hashes of the tokens and of the log-probabilities' bits: a
// speed-up of the engine must not change a single bit (fine-tune checkpoints are compared by hash across versions).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { modelConfig } from '../../model/config';
import { initParams } from '../../model/checkpoints/init-params';
import { OrtSampler } from '../../model/sampling/sampler';
import { Xoshiro128 } from '../../common/xoshiro';
import type { GenerateRequest, GenerateResult } from '../../model/backend';

// Recorded with K stored like V and q.K^T as a transposed-B FusedMatMul (tokens as before it on this workload;
// log-probabilities differ in the last bits).
const EXPECTED = { tokenHash: '972699d96bac6f5fac9c15919e7d2931e8e01cd31eb60341886c17337dd4ee24', logprobHash: '9196f9eb9eb5e9575cb116ff1ff9ac28364c68a91a6c21f8ec2f76385769c3f2', tokens: 2269 };

const c = modelConfig('embedded-1m');
const rng = new Xoshiro128(21);
// Scaled-up weights give peaked, position-dependent distributions (random init alone is near uniform).
const params = Float32Array.from(initParams(c, 4), (x) => x * 4 + 0.01 * rng.normal());

function workload(): GenerateRequest[] {
  const r = new Xoshiro128(8);
  const prompts = [3, 17, 40, 64, 65, 90].map((n) => Array.from({ length: n }, () => r.nextU32() % 256));
  const reqs: GenerateRequest[] = [];
  prompts.forEach((p, i) => {
    for (let s = 0; s < 4; s++) {
      const k = reqs.length;
      reqs.push({
        promptTokens: p, maxNewTokens: 40 + ((k * 37) % 120), seed: 1000 + k,
        temperature: k % 7 === 3 ? 0 : 0.8 + 0.1 * (k % 3), topK: k % 3 === 0 ? 0 : 20, topP: k % 4 === 1 ? 0.9 : 1,
        // Some rows stop early on a common token, so the batch compacts while others grow the cache.
        stopTokens: (i + s) % 3 === 0 ? [p[0], p[1] ?? 0] : [],
      });
    }
  });
  return reqs;
}

function digest(out: GenerateResult[]): typeof EXPECTED {
  const h = createHash('sha256');
  const lp = createHash('sha256');
  let tokens = 0;
  for (const o of out) {
    h.update(Int32Array.from([...o.tokens, -1]));
    h.update(o.stopReason);
    lp.update(Float64Array.from(o.logprobs));
    tokens += o.tokens.length;
  }
  return { tokenHash: h.digest('hex'), logprobHash: lp.digest('hex'), tokens };
}

void test('sampled tokens for fixed seeds equal the committed ones (2 threads, 2 waves; 1 thread, 1 wave; a second call)', async () => {
  const reqs = workload();
  for (const opts of [{ threads: 2, maxBatchRows: 16 }, { threads: 1, maxBatchRows: 64 }]) {
    const sampler = await OrtSampler.create(c, params, opts);
    const got = digest(await sampler.generate(reqs));
    // Again on the same sampler: its reused cache memory now holds the first call's values.
    const again = digest(await sampler.generate(reqs));
    await sampler.close();
    assert.deepEqual(again, got, 'a second call differs from the first');
    console.log(`[sampler-equivalence] ${JSON.stringify(opts)}: ${JSON.stringify(got)}`);
    assert.equal(got.tokens, EXPECTED.tokens, 'number of sampled tokens');
    assert.equal(got.tokenHash, EXPECTED.tokenHash, 'sampled tokens differ from the committed ones');
    assert.equal(got.logprobHash, EXPECTED.logprobHash, 'log-probabilities differ (in some bit) from the committed ones');
  }
});
