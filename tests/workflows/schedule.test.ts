// Workflow tests on a real dev server: the fixed schedule alternates exactly as specified, the patience
// rules switch exactly where the pure rules say, malformed input fails at once, and a run waits without
// error while no worker serves its activity queue.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { createActivityWorker, createTestWorker, startTestServer, testConfig, waitFor } from './env';
import { scriptedActivities } from './scripted-activities';
import { maybeRecordHistory } from './record';
import { initialHarnessPatience, initialWeightPatience, observeHarnessRound, observeWeightStep } from '../../workflows/decisions';
import { describeRun } from '../../cli/status';
import type { RunSummary } from '../../workflows/run-state';

let env: TestWorkflowEnvironment;
before(async () => (env = await startTestServer()));
after(async () => env?.teardown());

async function runToEnd(queue: string, config: Record<string, unknown>, script: Parameters<typeof scriptedActivities>[0], id: string) {
  const s = scriptedActivities(script);
  const worker = await createTestWorker(env, queue, s.activities);
  const summary = await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: queue, workflowId: id, args: [config] })) as RunSummary;
  await maybeRecordHistory(env.client, id, id.replace(/-\d+$/, ''));
  return { summary, calls: s.calls, assertFullyUsed: s.assertFullyUsed };
}

describe('fixed schedule (E, I)', () => {
  it('alternates weight and harness phases exactly and ends with a weight phase', async () => {
    const q = 'fixed-schedule';
    const score = (successRate: number, meanTurns: number) => ({ successRate, meanTurns });
    const { summary, calls, assertFullyUsed } = await runToEnd(q, testConfig(q, {
      method: 'whale-fixed', switching: { kind: 'fixed', weightEpochs: 0.3, harnessRounds: 3 },
      harness: { candidatesPerRound: 2 }, budget: { totalWeightSteps: 9 },
    }), {
      splitSizes: { weight: 100, harness: 8, test: 4 },
      rewards: [0.1, 0.2, 0.3, 0.3, 0.3, 0.4, 0.4, 0.5, 0.5],
      testScores: [0.1, 0.2, 0.3, 0.4],
      candidateScores: {
        'harness-phase-1/incoming': score(0.5, 3), 'harness-phase-1/r1-c1': score(0.6, 3), 'harness-phase-1/r1-c2': score(0.4, 2),
        'harness-phase-1/r2-c1': score(0.6, 2), 'harness-phase-1/r2-c2': score(0.3, 1),
        'harness-phase-2/incoming': score(0.7, 2), 'harness-phase-2/r1-c1': score(0.6, 1), 'harness-phase-2/r1-c2': score(0.7, 2),
        'harness-phase-2/r2-c1': score(0.5, 1),
      },
      invalid: ['harness-phase-2/r2-c2'],
    }, 'fixed-schedule-1');
    assertFullyUsed();
    assert.deepEqual(summary.phases.map((p) => `${p.kind}:${p.startStep}-${p.endStep}:${p.proposalRounds}`),
      ['weight:0-3:0', 'harness:3-3:2', 'weight:3-6:0', 'harness:6-6:2', 'weight:6-9:0']);
    // Phase 1: r2-c1 ties r1-c1 on success with fewer turns and is accepted; phase 2: nothing beats the incoming one (exact tie stays).
    assert.equal(summary.phases[1].acceptedHarness, 'harness-phase-1/r2-c1');
    assert.equal(summary.phases[3].acceptedHarness, 'harness-phase-1/r2-c1');
    assert.equal(summary.weightStepsDone, 9);
    assert.equal(summary.proposalRoundsDone, 4);
    assert.deepEqual(calls.filter((c) => c.activity === 'evaluateTest').map((c) => c.detail), ['initial', 'harness-phase-1-end', 'harness-phase-2-end', 'final']);
    assert.equal(summary.initialMeanAt8, 0.1);
    assert.equal(summary.bestMeanAt8, 0.4);
    assert.equal(summary.finalMeanAt8, 0.4);
    // Ledger: 9 steps x 10 prompts x 2 samples; search: 9 harness scorings x 8 tasks + 8 validations x 2 smoke rollouts.
    assert.deepEqual(summary.ledger, { training: 180, search: 9 * 8 + 8 * 2, test: 4 * 4 * 2 });
    // The sampler cursor persists across phases: step 4 continues where step 3 stopped.
    assert.deepEqual(calls.filter((c) => c.activity === 'rolloutBatch').map((c) => c.detail.split(' cursor ')[1]),
      ['0:0', '0:10', '0:20', '0:30', '0:40', '0:50', '0:60', '0:70', '0:80']);
  });
});

describe('adaptive patience', () => {
  it('switches exactly where the pure weight and harness rules say', async () => {
    const q = 'patience';
    const rewards = [0.1, 0.2, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.5, 0.6, 0.6, null, 0.6, 0.6, 0.6, 0.6, 0.6];
    const weightParams = { windowSteps: 3, burnInSteps: 3, patienceSteps: 3 }; // 0.3 epoch x 10 steps/epoch
    const harnessParams = { minProposalRounds: 2, patienceRounds: 1, maxProposalRounds: 4, stopAtScore: null };
    // Expected phase ends from the pure rules alone.
    const expectedWeightEnds: number[] = [];
    let st = initialWeightPatience();
    for (let step = 1; step <= rewards.length; step++) {
      const r = observeWeightStep(st, rewards[step - 1], weightParams);
      st = r.state;
      if (r.decision.shouldSwitch || step === rewards.length) {
        expectedWeightEnds.push(step);
        st = initialWeightPatience();
      }
    }
    const harnessScores = [0.5, 0.6, 0.55, 0.55]; // incoming, r1, r2, r3 of each harness phase
    let hs = initialHarnessPatience();
    let expectedRounds = 0;
    for (let round = 1; round <= 4; round++) {
      const r = observeHarnessRound(hs, Math.max(...harnessScores.slice(0, round + 1)), harnessParams);
      hs = r.state;
      expectedRounds = round;
      if (r.decision.shouldStop) break;
    }
    const candidateScores: Record<string, { successRate: number; meanTurns: number }> = {};
    for (let phase = 1; phase < expectedWeightEnds.length; phase++) {
      candidateScores[`harness-phase-${phase}/incoming`] = { successRate: harnessScores[0], meanTurns: 2 };
      for (let round = 1; round <= expectedRounds; round++) candidateScores[`harness-phase-${phase}/r${round}-c1`] = { successRate: harnessScores[round], meanTurns: 2 };
    }
    const phasesCount = expectedWeightEnds.length * 2 - 1;
    // A patience stop between cadence steps (every 10 steps here) gets its own test evaluation.
    const stopsOffCadence = expectedWeightEnds.slice(0, -1).map((end, i) => ({ end, phase: i + 1 })).filter((e) => e.end % 10 !== 0);
    const { summary, calls, assertFullyUsed } = await runToEnd(q, testConfig(q, {
      method: 'whale-adaptive',
      switching: { kind: 'patience', windowEpochs: 0.3, burnInEpochs: 0.3, patienceEpochs: 0.3, harnessMinProposalRounds: 2, harnessPatienceRounds: 1, harnessMaxProposalRounds: 4 },
      harness: { candidatesPerRound: 1 }, budget: { totalWeightSteps: rewards.length },
    }), {
      splitSizes: { weight: 100, harness: 8, test: 4 }, rewards,
      testScores: Array.from({ length: 1 + (expectedWeightEnds.length - 1) + stopsOffCadence.length + 2 }, (_, i) => i / 10),
      candidateScores,
    }, 'patience-1');
    assertFullyUsed();
    assert.equal(summary.phases.length, phasesCount);
    assert.deepEqual(summary.phases.filter((p) => p.kind === 'weight').map((p) => p.endStep), expectedWeightEnds);
    for (const p of summary.phases.filter((x) => x.kind === 'harness')) assert.equal(p.proposalRounds, expectedRounds);
    assert.ok(expectedWeightEnds.length >= 2, 'the script must make the weight rule fire at least once');
    assert.match(summary.phases[0].rule, /^switch: /);
    const labels = calls.filter((c) => c.activity === 'evaluateTest').map((c) => c.detail);
    assert.deepEqual(labels.filter((l) => l.startsWith('weight-phase-')), stopsOffCadence.map((e) => `weight-phase-${e.phase}-end`));
  });
});

describe('bad input and waiting', () => {
  it('fails a malformed config at once with a readable, non-retryable error', async () => {
    const q = 'malformed';
    const worker = await createTestWorker(env, q);
    const err = await worker.runUntil(
      env.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'malformed-1', args: [{ version: 1, method: 'weights-first', weight: { promptsPerStep: -3 } }] }).then(
        () => assert.fail('the run should have failed'), (e: unknown) => e),
    );
    assert.ok(err instanceof WorkflowFailedError);
    const cause = err.cause;
    assert.ok(cause instanceof ApplicationFailure);
    assert.equal(cause.type, 'InvalidRunConfig');
    assert.equal(cause.nonRetryable, true);
    assert.match(cause.message, /method: Invalid option/);
    assert.match(cause.message, /weight\.promptsPerStep/);
    await maybeRecordHistory(env.client, 'malformed-1', 'malformed');
  });

  it('waits in the activity queue while no worker serves it, shows where, and finishes once one does', async () => {
    const q = 'waiting-orch';
    const aq = 'waiting-model';
    const s = scriptedActivities({ splitSizes: { weight: 10, harness: 4, test: 4 }, rewards: [0.5], testScores: [0.2, 0.3], candidateScores: {} });
    const orchestration = await createTestWorker(env, q);
    const config = { ...testConfig(aq, { method: 'weights-only', budget: { totalWeightSteps: 1 } }) };
    const handle = await env.client.workflow.start('whaleRun', { taskQueue: q, workflowId: 'waiting-1', args: [config] });
    const summary = await orchestration.runUntil(async () => {
      const view = await waitFor('the run to wait on prepareRun', async () => {
        const v = await describeRun(env.client, 'waiting-1');
        return v.pending.length > 0 ? v : undefined;
      });
      assert.equal(view.status, 'RUNNING');
      assert.equal(view.pending[0].activityType, 'prepareRun');
      assert.equal(view.searchAttributes.WhalePhase, 'preparing');
      const activityWorker = await createActivityWorker(env, aq, s.activities);
      return activityWorker.runUntil(handle.result()) as Promise<RunSummary>;
    });
    assert.equal(summary.weightStepsDone, 1);
    s.assertFullyUsed();
  });
});
