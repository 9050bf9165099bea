// The comparison-protocol fields of the run config: version-1 inputs (and every recorded history's config)
// expand to protocol 'none' as they ran, each protocol's required budget is checked with a message naming the
// fix, the comparison preset expands to the sizes, and weight.taskLimit picks a seeded subset.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { expandRunConfig } from '../../workflows/run-config';
import { weightSubset, sampleWeightPrompts } from '../../activities/model-activities';
import { stepsPerEpoch } from '../../workflows/decisions';
import { ROOT } from './env';

function expand(input: Record<string, unknown>) {
  const r = expandRunConfig({ version: 1, ...input });
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
}

describe('budget protocol config', () => {
  it('a version-1 input without the fields expands to what it ran with: protocol none, no D_weight limit, no grid', () => {
    const c = expand({ method: 'whale-fixed' });
    assert.equal(c.test.everyRollouts, null);
    assert.equal(c.budget.protocol, 'none');
    assert.equal(c.budget.exhaustedAfterRounds, 3);
    assert.equal(c.weight.taskLimit, null);
  });

  it('every recorded history\'s run config from before the fields still expands, to protocol none', () => {
    const dir = path.join(ROOT, 'tests', 'histories', 'v1');
    let seen = 0;
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.json'))) {
      const first = JSON.parse(readFileSync(path.join(dir, f), 'utf8')).events[0];
      const payload = first?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
      if (!payload) continue;
      const input = JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8'));
      const r = expandRunConfig(input);
      if (!r.ok) continue; // malformed.json records a refused config on purpose
      // equal-budget-grid.json names the fields (recorded after they existed); every other input predates them.
      if (input.budget?.protocol !== undefined) continue;
      assert.equal(r.config.budget.protocol, 'none', f);
      assert.equal(r.config.weight.taskLimit, null, f);
      assert.equal(r.config.test.everyRollouts, null, f);
      seen += 1;
    }
    assert.ok(seen >= 5, `expected the configs of at least 5 recorded histories, read ${seen}`);
  });

  it('equal needs maxRollouts and paper refuses it, each naming the fix', () => {
    const equal = expandRunConfig({ version: 1, budget: { protocol: 'equal' } });
    assert.equal(equal.ok, false);
    assert.match(!equal.ok ? equal.problems.join('\n') : '', /^budget\.maxRollouts: protocol 'equal' .*set budget\.maxRollouts/m);
    const paper = expandRunConfig({ version: 1, budget: { protocol: 'paper', maxRollouts: 100 } });
    assert.equal(paper.ok, false);
    assert.match(!paper.ok ? paper.problems.join('\n') : '', /^budget\.maxRollouts: protocol 'paper' .*remove budget\.maxRollouts/m);
    assert.equal(expandRunConfig({ version: 1, budget: { protocol: 'fair' } }).ok, false);
    assert.equal(expandRunConfig({ version: 1, weight: { taskLimit: 0 } }).ok, false);
  });

  it('presets/compare-3-epochs.json: 3 epochs of a 640-prompt D_weight = 15,360 rollouts, WHALE fixed (0.6, 6) under protocol equal', () => {
    const r = expandRunConfig(JSON.parse(readFileSync(path.join(ROOT, 'presets', 'compare-3-epochs.json'), 'utf8')));
    assert.ok(r.ok, r.ok ? '' : r.problems.join('; '));
    const c = r.config;
    const spe = stepsPerEpoch(c.weight.taskLimit!, c.weight.promptsPerStep);
    assert.equal(spe, 10);
    assert.equal(c.budget.maxRollouts, 3 * spe * c.weight.promptsPerStep * c.weight.samplesPerPrompt);
    assert.equal(c.budget.maxRollouts, 15_360);
    assert.deepEqual([c.method, c.switching], ['whale-fixed', { kind: 'fixed', weightEpochs: 0.6, harnessRounds: 6 }]);
    assert.equal(c.budget.protocol, 'equal');
    // D_test every 0.5 epoch = 5 steps = 2,560 training rollouts.
    assert.equal(c.test.everyEpochs * spe * c.weight.promptsPerStep * c.weight.samplesPerPrompt, 2560);
    assert.deepEqual([c.harness.taskLimit, c.harness.candidatesPerRound, c.test.taskLimit, c.test.samplesPerTask], [128, 3, 128, 8]);
    // The grid every method is compared on: every 2,560 training + search rollouts.
    assert.equal(c.test.everyRollouts, 2560);
  });
});

describe('weight.taskLimit', () => {
  const all = Array.from({ length: 100 }, (_, i) => i);
  it('picks the same seeded subset every time, in the domain\'s order, and a different one for another seed', () => {
    const a = weightSubset(all, 30, 7);
    assert.equal(a.length, 30);
    assert.deepEqual(weightSubset(all, 30, 7), a);
    assert.deepEqual([...a].sort((x, y) => x - y), a);
    assert.equal(new Set(a).size, 30);
    assert.notDeepEqual(weightSubset(all, 30, 8), a);
    assert.notDeepEqual(a, all.slice(0, 30), 'a seeded subset, not the first N');
  });
  it('no limit, or one at least |D_weight|, is all of D_weight (a full run samples exactly as before)', () => {
    assert.equal(weightSubset(all, undefined, 7), all);
    assert.equal(weightSubset(all, 100, 7), all);
    assert.deepEqual(sampleWeightPrompts(weightSubset(all, undefined, 3), { epoch: 0, offset: 0 }, 10, 3), sampleWeightPrompts(all, { epoch: 0, offset: 0 }, 10, 3));
  });
  it('an epoch over the subset visits each of its prompts once', () => {
    const subset = weightSubset(all, 20, 1);
    const epoch = sampleWeightPrompts(subset, { epoch: 0, offset: 0 }, 20, 1);
    assert.deepEqual([...epoch].sort((x, y) => x - y), [...subset]);
  });
});
