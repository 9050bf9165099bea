// Workflow tests on a real dev server: pause, resume, stop and policy updates; continue-as-new keeps the
// state; an orchestration worker restarted mid-run finishes the run.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { createActivityWorker, createTestWorker, startTestServer, testConfig, waitFor } from './env';
import { gate, scriptedActivities } from './scripted-activities';
import { maybeRecordHistory } from './record';
import { describeRun } from '../../cli/status';
import { pauseRunSignal, resumeRunSignal, runStatusQuery, setSwitchingPolicyUpdate, stopRunUpdate } from '../../workflows/whale-run-messages';
import type { RunSummary } from '../../workflows/run-state';

let env: TestWorkflowEnvironment;
// A low continue-as-new threshold makes the carry-over path run in a short test.
before(async () => (env = await startTestServer(['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=60'])));
after(async () => env?.teardown());

describe('messages', () => {
  it('pauses, takes a validated policy update, resumes and stops gracefully', async () => {
    const q = 'messages';
    const atStep2 = gate();
    // Step 3 is held until the stop update is in: scripted steps finish at once, so the run could end first.
    const atStep3 = gate();
    const s = scriptedActivities({
      splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
      testScores: [0.1, 0.2], candidateScores: {},
      onRolloutBatch: async (step) => (step === 2 ? atStep2.wait() : step === 3 ? atStep3.wait() : undefined),
    });
    const worker = await createTestWorker(env, q, s.activities);
    const config = testConfig(q, { method: 'whale-fixed', switching: { kind: 'fixed', weightEpochs: 5, harnessRounds: 3 }, budget: { totalWeightSteps: 6 } });
    const handle = await env.client.workflow.start('whaleRun', { taskQueue: q, workflowId: 'messages-1', args: [config] });
    const summary = await worker.runUntil(async () => {
      await atStep2.reached;
      await handle.signal(pauseRunSignal);
      atStep2.open();
      await waitFor('the run to pause after step 2', async () => ((await describeRun(env.client, 'messages-1')).searchAttributes.WhaleRunState === 'paused' ? true : undefined));
      assert.equal(s.calls.filter((c) => c.activity === 'rolloutBatch').length, 2, 'no step may start while paused');
      assert.equal((await handle.query(runStatusQuery))?.control.paused, true);

      const previous = await handle.executeUpdate(setSwitchingPolicyUpdate, { args: [{ kind: 'patience', patienceEpochs: 0.5 }] });
      assert.deepEqual(previous, { kind: 'fixed', weightEpochs: 5, harnessRounds: 3 });
      const rejected = await handle.executeUpdate(setSwitchingPolicyUpdate, { args: [{ kind: 'patience', windowEpochs: -1 }] }).then(() => undefined, (e: unknown) => e);
      assert.ok(rejected instanceof WorkflowUpdateFailedError, 'an invalid policy must be rejected');
      assert.match(String((rejected.cause as Error).message), /windowEpochs/);
      const status = await handle.query(runStatusQuery);
      assert.equal(status?.config.switching.kind, 'patience');
      assert.equal(status?.policyChanges.length, 1);

      await handle.signal(resumeRunSignal);
      await atStep3.reached;
      const stop = await handle.executeUpdate(stopRunUpdate, { args: [{ mode: 'finish-step' }] });
      assert.deepEqual(stop, { stop: 'finish-step' });
      atStep3.open();
      return handle.result() as Promise<RunSummary>;
    });
    assert.equal(summary.stoppedEarly, true);
    assert.equal(summary.weightStepsDone, 3, 'finish-step stops after the step in flight (step 3)');
    assert.equal(summary.phases.at(-1)?.rule, 'stopped on request');
    assert.deepEqual(s.calls.filter((c) => c.activity === 'evaluateTest').map((c) => c.detail), ['initial', 'final'], JSON.stringify(summary.phases));
    await maybeRecordHistory(env.client, 'messages-1', 'messages');
  });
});

describe('harness candidates at fault', () => {
  it('logs a candidate that fails to load on the model worker as invalid and goes on', async () => {
    const q = 'unloadable';
    const s = scriptedActivities({
      splitSizes: { weight: 10, harness: 4, test: 4 }, rewards: [], testScores: [0.1, 0.2],
      candidateScores: { 'harness-phase-1/incoming': { successRate: 0.2, meanTurns: 2 }, 'harness-phase-1/r1-c2': { successRate: 0.5, meanTurns: 2 }, 'harness-phase-1/r2-c1': { successRate: 0.4, meanTurns: 2 }, 'harness-phase-1/r2-c2': { successRate: 0.1, meanTurns: 2 } },
      unloadable: ['harness-phase-1/r1-c1'],
    });
    const worker = await createTestWorker(env, q, s.activities);
    const config = testConfig(q, { method: 'harness-only', harness: { candidatesPerRound: 2 }, budget: { totalWeightSteps: 0, harnessOnlyProposalRounds: 2 } });
    const summary = await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'unloadable-1', args: [config] })) as RunSummary;
    assert.equal(summary.proposalRoundsDone, 2);
    assert.equal(summary.finalHarnessName, 'harness-phase-1/r1-c2');
    // Round 2 kept r1-c2: the unchanged (checkpoint, harness) pair is not evaluated again.
    assert.equal(summary.finalMeanAt8, 0.2);
    s.assertFullyUsed();
  });
});

describe('durability', () => {
  it('continues as new when the server suggests it and carries the whole state', async () => {
    const q = 'can';
    const rewards = Array.from({ length: 14 }, (_, i) => i / 20);
    const s = scriptedActivities({ splitSizes: { weight: 50, harness: 4, test: 4 }, rewards, testScores: [0.1, 0.2, 0.3, 0.4], candidateScores: {} });
    const worker = await createTestWorker(env, q, s.activities);
    const config = testConfig(q, { method: 'weights-only', budget: { totalWeightSteps: 14 }, test: { everyEpochs: 1, samplesPerTask: 2 } });
    const summary = await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'can-1', args: [config] })) as RunSummary;
    assert.ok(summary.continuedAsNew >= 1, `expected at least one continue-as-new, got ${summary.continuedAsNew}`);
    assert.equal(summary.weightStepsDone, 14);
    assert.deepEqual(summary.ledger, { training: 14 * 20, search: 0, test: 4 * 4 * 2 });
    assert.equal(summary.bestMeanAt8, 0.4);
    // The sampler cursor survived each carry-over: 5 steps per epoch, no prompt revisited within an epoch.
    assert.deepEqual(s.calls.filter((c) => c.activity === 'rolloutBatch').map((c) => c.detail.split(' cursor ')[1]),
      rewards.map((_, i) => `${Math.floor(i / 5)}:${(i % 5) * 10}`));
    s.assertFullyUsed();
    await maybeRecordHistory(env.client, 'can-1', 'continue-as-new');
  });

  it('finishes the run after the orchestration worker is restarted mid-run', async () => {
    const q = 'restart-orch';
    const aq = 'restart-model';
    const atStep2 = gate();
    const s = scriptedActivities({
      splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [0.1, 0.2, 0.3, 0.4], testScores: [0.1, 0.3], candidateScores: {},
      onRolloutBatch: async (step) => (step === 2 ? atStep2.wait() : undefined),
    });
    const activityWorker = await createActivityWorker(env, aq, s.activities);
    const config = testConfig(aq, { method: 'weights-only', budget: { totalWeightSteps: 4 } });
    const summary = await activityWorker.runUntil(async () => {
      const handle = await env.client.workflow.start('whaleRun', { taskQueue: q, workflowId: 'restart-1', args: [config] });
      const first = await createTestWorker(env, q);
      await first.runUntil(atStep2.reached);
      // The first orchestration worker is gone; its cached workflow state with it.
      atStep2.open();
      const second = await createTestWorker(env, q);
      return second.runUntil(handle.result()) as Promise<RunSummary>;
    });
    assert.equal(summary.weightStepsDone, 4);
    assert.equal(summary.finalMeanAt8, 0.3);
    s.assertFullyUsed();
  });
});
