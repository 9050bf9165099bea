// The run config's two tiers: a partial v1 input expands deterministically with defaults; every malformed
// input is rejected with a message that names the field and what to do.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { expandRunConfig } from '../../workflows/run-config';
import { loadTemporalConfig } from '../../temporal.config';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './env';

function problems(input: unknown): string {
  const r = expandRunConfig(input);
  assert.equal(r.ok, false, `expected ${JSON.stringify(input)} to be rejected`);
  return r.ok ? '' : r.problems.join('\n');
}

describe('run config v1', () => {
  it('expands a minimal input with the version defaults, deterministically', () => {
    const a = expandRunConfig({ version: 1 });
    const b = expandRunConfig({ version: 1 });
    assert.ok(a.ok && b.ok);
    assert.deepEqual(a, b);
    assert.equal(a.config.method, 'whale-fixed');
    assert.deepEqual(a.config.switching, { kind: 'fixed', weightEpochs: 0.6, harnessRounds: 6 });
    assert.equal(a.config.weight.samplesPerPrompt, 8);
    assert.equal(a.config.weight.topK, 20);
    assert.equal(a.config.harness.candidatesPerRound, 3);
    assert.equal(a.config.test.samplesPerTask, 8);
  });

  it('counts RSFT minibatches in calls for a v1 config without the field (recorded runs keep their meaning); the presets count trajectories', () => {
    const plain = expandRunConfig({ version: 1 });
    assert.ok(plain.ok);
    assert.equal(plain.config.weight.minibatchUnit, 'calls');
    for (const preset of ['demo', 'math-weights-only', 'paper']) {
      const r = expandRunConfig(JSON.parse(readFileSync(path.join(ROOT, 'presets', `${preset}.json`), 'utf8')));
      assert.ok(r.ok, preset);
      assert.equal(r.config.weight.minibatchUnit, 'trajectories', preset);
    }
    assert.match(problems({ version: 1, weight: { minibatchUnit: 'tokens' } }), /weight\.minibatchUnit/);
  });

  it('gives adaptive runs the paper patience defaults', () => {
    const r = expandRunConfig({ version: 1, method: 'whale-adaptive' });
    assert.ok(r.ok);
    assert.deepEqual(r.config.switching, {
      kind: 'patience', windowEpochs: 0.2, burnInEpochs: 0.2, patienceEpochs: 0.2,
      harnessMinProposalRounds: 5, harnessPatienceRounds: 2, harnessMaxProposalRounds: 15, harnessStopAtScore: null,
    });
  });

  const bad: [string, unknown, RegExp][] = [
    ['not an object', 'weights-only', /must be a JSON object/],
    ['null', null, /got null/],
    ['an array', [1], /got an array/],
    ['no version', { method: 'weights-only' }, /version: missing; add "version": 1/],
    ['unknown version', { version: 7 }, /version: 7 is not a config version/],
    ['unknown method', { version: 1, method: 'both' }, /^method: Invalid option/m],
    ['unknown field', { version: 1, epochs: 3 }, /Unrecognized key: "epochs"/],
    ['negative prompts', { version: 1, weight: { promptsPerStep: -1 } }, /weight\.promptsPerStep: Too small/],
    ['fractional samples', { version: 1, weight: { samplesPerPrompt: 2.5 } }, /weight\.samplesPerPrompt: Invalid input: expected int/],
    ['string steps', { version: 1, budget: { totalWeightSteps: 'ten' } }, /budget\.totalWeightSteps: Invalid input: expected number, received string/],
    ['adaptive with fixed switching', { version: 1, method: 'whale-adaptive', switching: { kind: 'fixed' } }, /method 'whale-adaptive' needs switching\.kind 'patience'/],
    ['fixed with patience switching', { version: 1, method: 'whale-fixed', switching: { kind: 'patience' } }, /method 'whale-fixed' needs switching\.kind 'fixed'/],
    ['unknown switching kind', { version: 1, switching: { kind: 'sometimes' } }, /switching\.kind/],
    ['zero weight steps for a weight method', { version: 1, method: 'weights-only', budget: { totalWeightSteps: 0 } }, /budget\.totalWeightSteps: method 'weights-only' trains weights/],
    ['temperature out of range', { version: 1, weight: { temperature: 0 } }, /weight\.temperature: Too small/],
    ['accept threshold above 1', { version: 1, weight: { acceptThreshold: 1.5 } }, /weight\.acceptThreshold: Too big/],
    ['bad checkpoint reference', { version: 1, model: { baseCheckpoint: { kind: 'checkpoint', uri: 'file:///x', sha256: 'abc', bytes: 1 } } }, /model\.baseCheckpoint\.(uri|sha256)/],
    ['openai proposer without model', { version: 1, harness: { proposer: { kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1' } } }, /harness\.proposer\.model/],
    ['coding agent without command', { version: 1, harness: { proposer: { kind: 'coding-agent', command: [] } } }, /harness\.proposer\.command: Too small/],
    ['negative seed', { version: 1, seed: -1 }, /seed: Too small/],
  ];
  for (const [name, input, expected] of bad) {
    it(`rejects ${name}`, () => assert.match(problems(input), expected));
  }
});

describe('temporal.config', () => {
  it('has defaults for the dev server and takes environment overrides', () => {
    const c = loadTemporalConfig({}, { WHALE_TEMPORAL_ADDRESS: '10.0.0.5:7233', WHALE_DEV_PORT: '17000', WHALE_QUEUE_MODEL: 'gpu' });
    assert.equal(c.address, '10.0.0.5:7233');
    assert.equal(c.devServer.port, 17000);
    assert.equal(c.taskQueues.model, 'gpu');
    assert.equal(c.taskQueues.orchestration, 'whale-orchestration');
    assert.equal(c.devServer.retention, '720h');
  });
  it('names the variable behind an invalid override', () => {
    assert.throws(() => loadTemporalConfig({}, { WHALE_DEV_PORT: '99999999' }), /devServer\.port: .*\(set by WHALE_DEV_PORT\?\)/);
    assert.throws(() => loadTemporalConfig({}, { WHALE_SHUTDOWN_GRACE: 'soon' }), /worker\.shutdownGraceTime: a duration/);
  });
});
