// The bench's run configs under the comparison protocols (pure, no server): at the three-epochs sizes every
// method expands under protocol equal at the same rollout budget, paper: tokens budget weight steps only, the
// preregistered preset is the whale-fixed:0.6:6 run, the default sizes still plan the committed runs' ids, and
// a run's result carries its protocol, budget use and evaluation grid, which results.md, results.json and the
// plots show (final mean@8 first), with none and dashes for a committed run from before the fields.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DEFAULT_BUDGET, DEFAULT_METHODS, SIZES, benchRunConfig, benchWorkflowId, parseMethod } from '../../bench/compare-plan';
import { expandRunConfig, type RunConfig } from '../../workflows/run-config';
import { ROOT } from '../workflows/env';
import { resultFromHistories, type RunResult } from '../../bench/compare-history';
import { markdownTable, plotSpec, runsMarkdown, writeResults } from '../../bench/compare-output';
import { aggregate } from '../../bench/compare-stats';
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

  it('results.md, results.json and the plots show each run\'s protocol, budget use, final then best mean@8 and its grid', async () => {
    const histories = readHistoryFiles([path.join(ROOT, 'tests', 'histories', 'v1', 'equal-budget-grid.json')]);
    const recorded = resultFromHistories({ domain: 'math', method: 'whale-fixed:0.3:3', seed: 0, workflowId: 'grid-fixed', input: {} }, histories);
    assert.ok(recorded);
    // A committed run from before the fields: its cached result has neither budget nor grid.
    const committed = (JSON.parse(readFileSync(path.join(ROOT, 'reports', 'bench', 'compare', 'results.json'), 'utf8')) as { runs: RunResult[] }).runs;
    const older = committed.find((r) => r.domain === 'math' && r.method === 'weights-only');
    assert.ok(older && older.budget === undefined && older.grid === undefined, 'the committed comparison predates the fields');
    const results = [older, recorded];
    const methods = ['weights-only', 'whale-fixed:0.3:3'];

    const table = markdownTable(aggregate(results, methods, ['math']).rows, { math: older.bestMeanAt8 });
    assert.match(table, /\| method \| protocol \| seeds \| final mean@8 \| best mean@8 \| rollouts used \| within budget \|/);
    assert.match(table, new RegExp(`\\| weights-only \\| none \\| 1 \\| ${older.finalMeanAt8!.toFixed(4)} ± 0\\.0000 \\| ${older.bestMeanAt8!.toFixed(4)} ± 0\\.0000 \\| ${older.rolloutsUsed} ± 0 \\| - \\|`));
    assert.match(table, /\| whale-fixed:0\.3:3 \| equal \| 1 \| 0\.6000 ± 0\.0000 \| 0\.6000 ± 0\.0000 \| 180 ± 0 \| 1\/1 runs \|/);

    const runs = runsMarkdown(results, ['math']);
    assert.match(runs, /\| whale-fixed:0\.3:3 \| 0 \| equal \| 0\.6000 \| 0\.6000 \| 180 \/ 190 \| 10 \| yes \| 50 \(60\), 100, 150 \(160\) \|/);
    assert.match(runs, new RegExp(`\\| weights-only \\| ${older.seed} \\| none \\| ${older.finalMeanAt8!.toFixed(4)} \\| ${older.bestMeanAt8!.toFixed(4)} \\| ${older.rolloutsUsed} / - \\| - \\| - \\| - \\|`));

    const spec = plotSpec('math', results) as { layer: Array<{ mark: { type: string; shape?: string }; data: { values: Array<Record<string, unknown>> } }> };
    assert.deepEqual(spec.layer.map((l) => l.mark.type), ['rule', 'area', 'line', 'point']);
    assert.deepEqual(spec.layer[0].data.values, [{ gridPoint: 50 }, { gridPoint: 100 }, { gridPoint: 150 }]);
    assert.equal(spec.layer[3].mark.shape, 'diamond');
    assert.deepEqual(spec.layer[1].data.values.map((v) => [v.x, v.meanAt8]), [[50, 0.3], [100, 0.3], [150, 0.5]], 'the seed band spans the grid points');
    // A run that ended less than a weight step short of its cap adds its final score at the cap; one that ended
    // early (the proposer exhausted: more than a weight step unspent) keeps its band where it ended.
    const bandX = (promptsPerStep: number) => {
      const input = { version: 1, method: 'whale-fixed', domain: 'math', weight: { promptsPerStep, samplesPerPrompt: 4 } };
      const p = plotSpec('math', [{ ...recorded, input }]) as { layer: Array<{ data: { values: Array<Record<string, unknown>> } }> };
      return p.layer[1].data.values.map((v) => [v.x, v.meanAt8]);
    };
    assert.deepEqual(bandX(4), [[50, 0.3], [100, 0.3], [150, 0.5], [190, 0.6]], 'ended at 180 of 190, a step is 4 x 4: its final at the cap');
    assert.deepEqual(bandX(2), [[50, 0.3], [100, 0.3], [150, 0.5]], 'unspent 10 > a step of 2 x 4 rollouts: no point at the cap');
    assert.deepEqual(spec.layer[3].data.values.map((v) => [v.gridPoint, v.rollouts, v.meanAt8]), [[50, 60, 0.3], [100, 100, 0.3], [150, 160, 0.5]]);
    assert.deepEqual((plotSpec('math', [older]) as { layer: Array<{ mark: { type: string } }> }).layer.map((l) => l.mark.type), ['area', 'line'], 'no grid: no grid marks, the band over the curve');

    const out = mkdtempSync(path.join(tmpdir(), 'whale-compare-out-'));
    try {
      const planned = results.map((r) => ({ domain: r.domain, method: r.method, seed: r.seed, workflowId: r.workflowId, input: {} }));
      const opts = { domains: ['math'], seeds: [0], methods, budget: 190, sizes: 'tiny' as const, out, parallel: 1, workers: 'none' as const, plan: false };
      await writeResults(out, opts, planned, results, []);
      const file = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as { runs: Array<RunResult & { protocol: string }> };
      assert.deepEqual(file.runs.map((r) => [r.protocol, r.budget?.withinBudget ?? null, r.grid?.length ?? null, r.finalMeanAt8, r.bestMeanAt8]), [
        ['none', null, null, older.finalMeanAt8, older.bestMeanAt8], ['equal', true, 3, 0.6, 0.6],
      ]);
      const md = readFileSync(path.join(out, 'results.md'), 'utf8');
      assert.ok(md.includes(runs), 'results.md holds the runs table');
      assert.match(readFileSync(path.join(out, 'test-mean-at-8-math.svg'), 'utf8'), /^<svg[\s\S]*grid evaluations/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
