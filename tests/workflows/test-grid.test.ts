// The comparison's evaluation grid on a real dev server: D_test at every multiple of test.everyRollouts
// training + search rollouts, a grid point inside a harness phase evaluated at the phase end with the harness
// the phase started with, the exact count recorded; harness-only runs evaluate theirs after the round. With a
// grid, D_test is scored only at the start, the grid points and the end (no cadence, round or phase-end runs).
// WHALE_RECORD_HISTORIES=1 records the WHALE run as tests/histories/v1/equal-budget-grid-only.json (the older
// equal-budget-grid.json, recorded before the grid-only rule, stays to guard its replay path).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTestWorker, startTestServer, testConfig } from './env';
import { fakeRef, scriptedActivities, type Script } from './scripted-activities';
import type { RunSummary } from '../../workflows/run-state';
import { maybeRecordHistory } from './record';
import { allTests, buildTimeline } from '../../audit/timeline';
import { explainPhases } from '../../audit/explain';
import { summaryMarkdown } from '../../audit/report';
import { METRIC_KEYS, trackedRun } from '../../track/run-metrics';

let env: TestWorkflowEnvironment;
before(async () => (env = await startTestServer()));
after(async () => env?.teardown());

// 20 rollouts a step; D_harness 8 tasks: round 0 costs 8, a round of 2 candidates 16 (validation costs none).
const SCRIPT: Script = {
  splitSizes: { weight: 100, harness: 8, test: 4 }, rewards: [0.3], testScores: [0.2, 0.3, 0.4, 0.5, 0.6], lenient: true,
  candidateScores: { 'harness-phase-1/r1-c1': { successRate: 0.9, meanTurns: 1 } },
};

async function run(id: string, overrides: Record<string, unknown>) {
  const s = scriptedActivities(SCRIPT);
  const harnessOf: Record<string, string> = {};
  const activities = {
    ...s.activities,
    validateHarness: async (input: Parameters<typeof s.activities.validateHarness>[0]) => ({ ...(await s.activities.validateHarness(input)), rollouts: 0 }),
    evaluateTest: async (input: Parameters<typeof s.activities.evaluateTest>[0]) => {
      harnessOf[input.label] = input.harness.sha256;
      return s.activities.evaluateTest(input);
    },
  };
  const worker = await createTestWorker(env, id, activities);
  const config = testConfig(id, { harness: { candidatesPerRound: 2 }, ...overrides });
  const summary = await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: id, workflowId: id, args: [config] })) as RunSummary;
  // The WHALE run takes both patched paths (protocol equal, the grid): its history guards them in tests/replay.
  if (id === 'grid-fixed') await maybeRecordHistory(env.client, id, 'equal-budget-grid-only');
  const history = await env.client.workflow.getHandle(id).fetchHistory();
  return { summary, harnessOf, history, tests: s.calls.filter((c) => c.activity === 'evaluateTest').map((c) => c.detail) };
}

describe('evaluation grid (test.everyRollouts)', () => {
  it('WHALE fixed: grid points after weight steps, and one inside a harness phase at its end with the incoming harness', async () => {
    const { summary, harnessOf, history, tests } = await run('grid-fixed', {
      method: 'whale-fixed', switching: { kind: 'fixed', weightEpochs: 0.3, harnessRounds: 3 },
      budget: { protocol: 'equal', totalWeightSteps: 10, maxRollouts: 190 }, test: { everyEpochs: 1, samplesPerTask: 2, everyRollouts: 50 },
    });
    // Steps reach 60 (grid 50); the harness phase runs 60 -> 100 (grid 100, evaluated at its end under h0);
    // the next weight phase reaches 160 (grid 150) and ends at 180.
    assert.deepEqual(summary.gridEvaluations?.map((e) => [e.gridPoint, e.atRollouts, e.atWeightStep]), [[50, 60, 3], [100, 100, 3], [150, 160, 6]]);
    // Grid 100 is the pair (step-3 weights, h0) that grid 50 already scored: recorded again, not evaluated again.
    // Off-grid evaluations (the step cadence, the harness phase's end) are not made: every method is scored at
    // the same points. Grid 150 is the first score of the accepted harness.
    assert.deepEqual(tests, ['initial', 'grid-50', 'grid-150', 'final']);
    assert.deepEqual(summary.gridEvaluations?.map((e) => e.meanAt8), [0.3, 0.3, 0.4]);
    assert.equal(harnessOf['grid-50'], fakeRef('harness', 'h0').sha256);
    assert.notEqual(harnessOf['grid-150'], harnessOf['grid-50']);
    assert.equal(summary.finalMeanAt8, 0.5);
    assert.equal(summary.bestMeanAt8, 0.5, 'best is the maximum over the grid and the final score only');
    // The result lists every evaluation, the reused grid-100 too, and the timeline and the tracker take it
    // from there: grid-100 ran no activity, so the history's activities alone would miss it.
    assert.deepEqual(summary.testEvaluations?.map((e) => [e.label, e.atRollouts, e.meanAt8]),
      [['initial', 0, 0.2], ['grid-50', 60, 0.3], ['grid-100', 100, 0.3], ['grid-150', 160, 0.4], ['final', 180, 0.5]]);
    const timeline = buildTimeline('grid-fixed', [history]);
    assert.deepEqual(allTests(timeline).map((e) => [e.label, e.reused]),
      [['initial', false], ['grid-50', false], ['grid-100', true], ['grid-150', false], ['final', false]]);
    const tracked = trackedRun(timeline, [history]);
    const series = tracked.metrics.filter((m) => m.key === METRIC_KEYS.testMeanAt8);
    assert.deepEqual(series.map((m) => [m.step, m.value]), summary.testEvaluations!.map((e) => [e.atRollouts, e.meanAt8]));
    assert.equal(series[2]!.timestamp, series[1]!.timestamp, 'a reused score takes the time of the evaluation it reused');
    // The audit's table lists it too, marked.
    assert.match(summaryMarkdown(timeline, explainPhases(timeline)), /\| grid-100 \| 3 \| 100 \| 0\.300\d* \(reused: checkpoint and harness unchanged\) \|/);
  });

  it('harness-only: each round\'s grid points are evaluated after it, several at once when a round spans them', async () => {
    const { summary, tests } = await run('grid-harness-only', {
      method: 'harness-only', budget: { protocol: 'equal', totalWeightSteps: 0, maxRollouts: 60 }, test: { everyEpochs: 1, samplesPerTask: 2, everyRollouts: 10 },
    });
    // Round 0 (8), rounds at 24, 40, 56: grid points 10 and 20 at 24, 30 and 40 at 40, 50 at 56.
    assert.deepEqual(summary.gridEvaluations?.map((e) => [e.gridPoint, e.atRollouts]), [[10, 24], [20, 24], [30, 40], [40, 40], [50, 56]]);
    // No per-round evaluation besides the grid: D_test is scored only where the pair changed at a grid point.
    assert.ok(tests.every((t) => t === 'initial' || t === 'final' || t.startsWith('grid-')), `off-grid evaluations: ${tests.join(', ')}`);
  });

  it('no grid without the field: no grid evaluations in the summary', async () => {
    const { summary, tests } = await run('grid-none', { method: 'weights-only', budget: { totalWeightSteps: 2 } });
    assert.equal(summary.gridEvaluations, undefined);
    assert.deepEqual(tests, ['initial', 'final']);
  });
});
