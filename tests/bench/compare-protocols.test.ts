// The bench's run configs under the comparison protocols (pure, no server): at the three-epochs sizes every
// method expands under protocol equal at the same rollout budget, paper: tokens budget weight steps only, the
// preregistered preset is the whale-fixed:0.6:6 run, the default sizes still plan the committed runs' ids, and
// a run's result carries its protocol, budget use and evaluation grid.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_BUDGET, DEFAULT_METHODS, SIZES, benchRunConfig, benchWorkflowId, parseMethod } from '../../bench/compare-plan';
import { expandRunConfig, type RunConfig } from '../../workflows/run-config';
import { ROOT } from '../workflows/env';
import { resultFromHistories } from '../../bench/compare-history';
import { readHistoryFiles } from '../../audit/timeline';

const BUDGET = 15_360;
const TOKENS = ['weights-only', 'harness-only', 'stagewise', 'stagewise-harness-first', 'prompt-only', 'whale-fixed:0.6:6', 'whale-adaptive'];

function expanded(token: string): RunConfig {
  const r = expandRunConfig(benchRunConfig(token, 'math', 0, BUDGET, SIZES['three-epochs']));
  assert.ok(r.ok, `${token}: ${r.ok ? '' : r.problems.join('; ')}`);
  return r.config;
}

describe('bench configs under the comparison protocols', () => {
  it('three-epochs: every method under protocol equal at the same budget, D_weight 640, the grid every 2,560', () => {
    for (const t of TOKENS) {
      const c = expanded(t);
      assert.deepEqual([c.budget.protocol, c.budget.maxRollouts, c.weight.taskLimit, c.weight.minibatchUnit, c.test.everyRollouts], ['equal', BUDGET, 640, 'trajectories', 2560], t);
    }
    assert.deepEqual([expanded('stagewise').stagewiseOrder, expanded('stagewise').budget.totalWeightSteps], ['weights-first', 15]);
    assert.equal(expanded('stagewise-harness-first').stagewiseOrder, 'harness-first');
    assert.equal(expanded('harness-only').budget.totalWeightSteps, 0);
    assert.deepEqual(expanded('whale-adaptive').switching, {
      kind: 'patience', windowEpochs: 0.2, burnInEpochs: 0.2, patienceEpochs: 0.2, harnessMinProposalRounds: 5, harnessPatienceRounds: 2, harnessMaxProposalRounds: 15, harnessStopAtScore: null,
    });
  });

  it('paper: weights-only, WHALE fixed and adaptive get the full weight steps and no rollout cap; other methods are refused', () => {
    for (const t of ['paper:weights-only', 'paper:whale-fixed:0.6:6', 'paper:whale-adaptive']) {
      const c = expanded(t);
      assert.deepEqual([c.budget.protocol, c.budget.maxRollouts, c.budget.totalWeightSteps], ['paper', null, 30], t);
    }
    assert.throws(() => parseMethod('paper:harness-only'), /paper: takes weights-only, whale-adaptive or whale-fixed:E:I/);
    assert.throws(() => parseMethod('paper:paper:weights-only'), /paper: takes/);
  });

  it('presets/compare-3-epochs.json is the whale-fixed:0.6:6 run of the three-epochs sizes', () => {
    const preset = expandRunConfig(JSON.parse(readFileSync(path.join(ROOT, 'presets', 'compare-3-epochs.json'), 'utf8')));
    assert.ok(preset.ok);
    const bench = expanded('whale-fixed:0.6:6');
    const strip = (c: RunConfig) => ({ ...c, name: '' });
    assert.deepEqual(strip(preset.config), strip(bench));
  });

  it('the default sizes still plan the committed comparison\'s workflow ids', () => {
    const committed = JSON.parse(readFileSync(path.join(ROOT, 'reports', 'bench', 'compare', 'results.json'), 'utf8')) as { runs: { workflowId: string; domain: string; method: string; seed: number }[] };
    let found = 0;
    for (const r of committed.runs) {
      if (!(DEFAULT_METHODS as readonly string[]).includes(r.method)) continue;
      const input = benchRunConfig(r.method, r.domain, r.seed, DEFAULT_BUDGET, SIZES.default);
      assert.equal(benchWorkflowId(r.method, r.domain, r.seed, DEFAULT_BUDGET, input), r.workflowId);
      found += 1;
    }
    assert.ok(found >= 20, `expected the committed runs, matched ${found}`);
  });

  it('a run\'s result carries its protocol, budget use and grid (from the recorded equal-protocol history)', () => {
    const histories = readHistoryFiles([path.join(ROOT, 'tests', 'histories', 'v1', 'equal-budget-grid.json')]);
    const r = resultFromHistories({ domain: 'test-domain', method: 'whale-fixed:0.3:3', seed: 0, workflowId: 'grid-fixed', input: {} }, histories);
    assert.ok(r);
    assert.deepEqual(r.budget, { protocol: 'equal', maxRollouts: 190, totalWeightSteps: 10, spentRollouts: 180, unspentRollouts: 10, withinBudget: true });
    assert.deepEqual(r.grid?.map((g) => [g.gridPoint, g.atRollouts]), [[50, 60], [100, 100], [150, 160]]);
    assert.equal(r.rolloutsUsed, 180);
  });
});
