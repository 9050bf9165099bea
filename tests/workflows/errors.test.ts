// The error model on a real dev server: a decision rule that refuses its input fails the run at once with
// its type and message (never a workflow task retried forever), and the activity boundary's failures are
// honoured by Temporal: a user-input fault is tried once, a system fault is retried until it goes away.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { createTestWorker, startTestServer, testConfig, waitFor } from './env';
import { scriptedActivities } from './scripted-activities';
import { atActivityBoundary } from '../../activities/activity-context';
import { AgentConfigError } from '../../agent/errors';
import { ArtifactIntegrityError } from '../../store/artifact-store';
import type { RunSummary } from '../../workflows/run-state';
import { buildTimeline, fetchHistories } from '../../audit/timeline';

let env: TestWorkflowEnvironment;
before(async () => (env = await startTestServer()));
after(async () => env?.teardown());

const SPLITS = { weight: 100, harness: 8, test: 4 };

/** The run's outcome once it closed, or the first failed workflow task (which Temporal would retry forever). */
async function outcome(workflowId: string): Promise<{ status: string; taskFailures: string[] }> {
  return waitFor(`run ${workflowId} to close or a workflow task to fail`, async () => {
    const handle = env.client.workflow.getHandle(workflowId);
    const { status } = await handle.describe();
    const events = (await handle.fetchHistory()).events ?? [];
    const taskFailures = events.filter((e) => e.workflowTaskFailedEventAttributes).map((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? '');
    return status.name !== 'RUNNING' || taskFailures.length > 0 ? { status: status.name, taskFailures } : undefined;
  });
}

describe('decision errors in the workflow', () => {
  it('a candidate score outside [0, 1] fails the run at once with DecisionInputError, no task retried', async () => {
    const q = 'decision-error';
    const s = scriptedActivities({
      splitSizes: SPLITS, rewards: [0.2], testScores: [0.1],
      candidateScores: { 'harness-phase-1/incoming': { successRate: 1.5, meanTurns: 2 } },
    });
    const worker = await createTestWorker(env, q, s.activities);
    const config = testConfig(q, { method: 'whale-fixed', switching: { kind: 'fixed', weightEpochs: 0.1, harnessRounds: 1 }, budget: { totalWeightSteps: 2 } });
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('whaleRun', { taskQueue: q, workflowId: 'decision-error-1', args: [config] });
      const seen = await outcome(handle.workflowId);
      // A run whose task keeps failing never closes: end it so the assertion below can say so.
      if (seen.status === 'RUNNING') await handle.terminate('the workflow task failed instead of the run');
      return { seen, err: await handle.result().then(() => null, (e: unknown) => e) };
    });
    assert.deepEqual(result.seen, { status: 'FAILED', taskFailures: [] });
    const err = result.err;
    assert.ok(err instanceof WorkflowFailedError, String(err));
    const cause = err.cause;
    assert.ok(cause instanceof ApplicationFailure, String(cause));
    assert.equal(cause.type, 'DecisionInputError');
    assert.equal(cause.nonRetryable, true);
    assert.match(cause.message, /successRate of .*incoming must lie in \[0, 1\], got 1\.5/);
    assert.deepEqual(cause.details, [{ fault: 'bug' }]);
    // What `whale audit` says about the run: the error's type and the rule's message.
    const timeline = buildTimeline('decision-error-1', await fetchHistories(env.client, 'decision-error-1'));
    assert.equal(timeline.status, 'failed');
    assert.match(timeline.failure ?? '', /^DecisionInputError: successRate of .*incoming must lie in \[0, 1\], got 1\.5/);
    // The run got as far as the score: the weight step and the incoming harness's evaluation ran.
    assert.deepEqual(s.calls.map((c) => c.activity), ['prepareRun', 'evaluateTest', 'rolloutBatch', 'fineTuneStep', 'evaluateHarness']);
  });
});

describe('the activity boundary on a real worker', () => {
  it('a user-input fault fails the run after one attempt, with its class name as the failure type', async () => {
    const q = 'boundary-user-input';
    const s = scriptedActivities({ splitSizes: SPLITS, rewards: [], testScores: [], candidateScores: {} });
    let attempts = 0;
    const activities = atActivityBoundary({
      ...s.activities,
      async prepareRun() {
        attempts++;
        throw new AgentConfigError('invalid rollout settings: topP must lie in (0, 1], got 2');
      },
    });
    const worker = await createTestWorker(env, q, activities);
    const config = testConfig(q, { method: 'weights-only', budget: { totalWeightSteps: 1 } });
    const err = await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'boundary-user-input-1', args: [config] }).then(
      () => assert.fail('the run should have failed'), (e: unknown) => e));
    assert.ok(err instanceof WorkflowFailedError, String(err));
    assert.ok(err.cause instanceof ActivityFailure, String(err.cause));
    const failure = err.cause.cause;
    assert.ok(failure instanceof ApplicationFailure, String(failure));
    assert.deepEqual([failure.type, failure.nonRetryable, failure.message], ['AgentConfigError', true, 'invalid rollout settings: topP must lie in (0, 1], got 2']);
    assert.deepEqual(failure.details, [{ fault: 'user-input' }]);
    assert.equal(attempts, 1, 'a user-input fault is not retried');
    const timeline = buildTimeline('boundary-user-input-1', await fetchHistories(env.client, 'boundary-user-input-1'));
    assert.equal(timeline.failure, 'Activity task failed; caused by AgentConfigError: invalid rollout settings: topP must lie in (0, 1], got 2');
  });

  it('a system fault is retried, and the run completes once it goes away', async () => {
    const q = 'boundary-system';
    const s = scriptedActivities({ splitSizes: SPLITS, rewards: [0.3], testScores: [0.1, 0.2], candidateScores: {} });
    let attempts = 0;
    const activities = atActivityBoundary({
      ...s.activities,
      async prepareRun(input: Parameters<typeof s.activities.prepareRun>[0]) {
        attempts++;
        if (attempts === 1) throw new ArtifactIntegrityError('artifact cas://sha256/00 (checkpoint) is corrupt: restore it');
        return s.activities.prepareRun(input);
      },
    });
    const worker = await createTestWorker(env, q, activities);
    const config = testConfig(q, { method: 'weights-only', budget: { totalWeightSteps: 1 } });
    const summary = await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'boundary-system-1', args: [config] })) as RunSummary;
    assert.equal(attempts, 2, 'the system fault was retried once, then the attempt succeeded');
    assert.equal(summary.weightStepsDone, 1);
    s.assertFullyUsed();
  });
});
