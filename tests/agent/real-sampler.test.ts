// The loop on real parts: the onnxruntime sampler (a small random-initialised model), the math domain's
// environment and its seed harness in the sandbox. Checks the model-call records against the backend's
// contract and that a rerun with the same seeds replays exactly.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { runEpisodes } from '../../agent/loop';
import { trainingExamplesFromTrajectories } from '../../agent/trajectory';
import { getDomain } from '../../domains/registry';
import { SandboxPool } from '../../harness-sandbox/pool';
import { modelConfig } from '../../model/config';
import { initParams } from '../../model/checkpoints/init-params';
import { OrtSampler } from '../../model/sampling/sampler';
import { SPECIAL_TOKENS } from '../../model/tokenizer';

const pool = new SandboxPool();
after(() => pool.close());

void test('real sampler + math environment + sandboxed seed harness: records match the backend contract and replay exactly', async () => {
  const config = modelConfig({ contextLength: 1024, dModel: 32, nLayers: 2, nHeads: 2 });
  const backend = await OrtSampler.create(config, initParams(config, 3), { deterministic: true });
  try {
    const math = getDomain('math').load({ kind: 'synthetic' });
    const source = readFileSync(path.resolve(__dirname, '..', '..', 'domains', 'math', 'harnesses', 'h0.ts'), 'utf8');
    const loaded = await pool.loadHarness(source);
    assert.ok(loaded.ok, JSON.stringify(!loaded.ok && loaded.violations));
    const run = () =>
      runEpisodes({
        backend,
        environment: math.environment,
        harness: loaded.runner,
        tasks: math.splits.harness.slice(0, 3),
        samplesPerTask: 2,
        sampling: { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 24, maxEpisodeTokens: 200 },
        runSeed: 11,
        step: 0,
      });
    const a = await run();
    const b = await run();
    assert.deepEqual(a.trajectories, b.trajectories, 'same seeds, same trajectories');
    assert.equal(a.trajectories.length, 6);
    for (const t of a.trajectories) {
      assert.ok(t.modelCalls.length >= 1);
      for (const c of t.modelCalls) {
        assert.equal(c.logprobs.length, c.generatedTokens.length);
        assert.ok(c.logprobs.every((lp) => Number.isFinite(lp) && lp <= 0));
        assert.ok(c.generatedTokens.length <= 24);
        assert.ok(c.promptTokens.length + c.generatedTokens.length <= 1024);
        assert.equal(c.promptTokens.at(-1), SPECIAL_TOKENS.ASSISTANT);
      }
    }
    const examples = trainingExamplesFromTrajectories(a.trajectories, { minReward: -1 });
    assert.equal(examples.length, a.trajectories.reduce((n, t) => n + t.modelCalls.length, 0));
  } finally {
    await backend.close();
  }
});
