// Workflow test on a real dev server for two rules added after runs were recorded (each behind patched()):
// a harness-phase round whose proposer wrote nothing is counted but not judged by patience (as in the
// reference release), and a weight phase that patience ends between cadence steps gets a test evaluation.
// The audit, rebuilt from the run's history, recomputes the same harness-phase end.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTestWorker, startTestServer, testConfig } from './env';
import { scriptedActivities } from './scripted-activities';
import { maybeRecordHistory } from './record';
import { initialHarnessPatience, observeHarnessRound, skipHarnessRound } from '../../workflows/decisions';
import { buildTimeline, fetchHistories } from '../../audit/timeline';
import { explainPhases } from '../../audit/explain';
import type { RunSummary } from '../../workflows/run-state';

let env: TestWorkflowEnvironment;
before(async () => (env = await startTestServer()));
after(async () => env?.teardown());

describe('patience rounds that scored nothing, and the test evaluation at an adaptive stop', () => {
  it('counts a failed proposal round without judging it, evaluates the pair an adaptive stop hands on, and the audit agrees', async () => {
    const q = 'patience-unscored';
    const params = { minProposalRounds: 2, patienceRounds: 1, maxProposalRounds: 4, stopAtScore: null };
    // Archive best after each proposal round: r1 scores 0.6, r2's proposer fails, r3 scores 0.7, r4 0.55.
    const bests = [0.6, 0.6, 0.7, 0.7];
    const scored = [true, false, true, true];
    // The old rule would have stopped after round 2 (min 2 rounds, 1 without a new best); the new one goes on.
    const old = observeHarnessRound(observeHarnessRound(initialHarnessPatience(), bests[0], params).state, bests[1], params);
    assert.equal(old.decision.shouldStop, true, 'the script must tell the two rules apart');
    let hp = initialHarnessPatience();
    let expectedRounds = 0;
    for (let r = 0; r < bests.length; r++) {
      const o = scored[r] ? observeHarnessRound(hp, bests[r], params) : skipHarnessRound(hp, bests[r], params);
      hp = o.state;
      expectedRounds = r + 1;
      if (o.decision.shouldStop) break;
    }
    assert.equal(expectedRounds, 4);

    const s = scriptedActivities({
      splitSizes: { weight: 100, harness: 8, test: 4 },
      // W = B = P = 1 step: phase 1 stops at step 2 (off the 10-step cadence); phase 2 ends on the budget.
      rewards: [0.5, 0.4, 0.5, 0.4],
      testScores: [0.1, 0.2, 0.3, 0.4],
      candidateScores: {
        'harness-phase-1/incoming': { successRate: 0.5, meanTurns: 2 }, 'harness-phase-1/r1-c1': { successRate: 0.6, meanTurns: 2 },
        'harness-phase-1/r3-c1': { successRate: 0.7, meanTurns: 2 }, 'harness-phase-1/r4-c1': { successRate: 0.55, meanTurns: 2 },
      },
      proposerFails: ['harness-phase-1/r2'],
    });
    const worker = await createTestWorker(env, q, s.activities);
    const id = 'patience-unscored-1';
    const summary = await worker.runUntil(env.client.workflow.execute('whaleRun', {
      taskQueue: q, workflowId: id,
      args: [testConfig(q, {
        method: 'whale-adaptive',
        switching: { kind: 'patience', windowEpochs: 0.1, burnInEpochs: 0.1, patienceEpochs: 0.1, harnessMinProposalRounds: 2, harnessPatienceRounds: 1, harnessMaxProposalRounds: 4 },
        harness: { candidatesPerRound: 1 }, budget: { totalWeightSteps: 4 },
      })],
    })) as RunSummary;
    await maybeRecordHistory(env.client, id, 'patience-unscored');
    s.assertFullyUsed();

    assert.deepEqual(summary.phases.map((p) => `${p.kind}:${p.endStep}:${p.proposalRounds}`), ['weight:2:0', 'harness:2:4', 'weight:4:0']);
    assert.match(summary.phases[0].rule, /^switch: /);
    assert.match(summary.phases[1].rule, /hard cap 4/);
    assert.equal(summary.phases[1].acceptedHarness, 'harness-phase-1/r3-c1');
    assert.deepEqual(s.calls.filter((c) => c.activity === 'evaluateTest').map((c) => c.detail), ['initial', 'weight-phase-1-end', 'harness-phase-1-end', 'final']);
    assert.equal(summary.bestMeanAt8, 0.4);

    const timeline = buildTimeline(id, await fetchHistories(env.client, id));
    assert.ok(timeline.patches.some((p) => p.id === 'harness-patience-skips-unscored-rounds' && p.atHarnessPhase === 0), JSON.stringify(timeline.patches));
    const harness = explainPhases(timeline).find((p) => p.kind === 'harness');
    assert.ok(harness);
    assert.equal(harness.matches, true, JSON.stringify(harness));
    assert.match(harness.trace[1], /round 2: continue: proposal round 2 scored no candidate/);
    assert.match(harness.rule, /hard cap 4/);
  });
});
