// Bad input on a real dev server: malformed run configs started with the real `temporal workflow start`
// fail the run at once (a non-retryable InvalidRunConfig ApplicationFailure listing the bad fields, no
// workflow task retried, no activity scheduled); wrong values sent mid-run through updates are rejected by
// the validators with the reason, change nothing, and the run goes on to complete. Activities are scripted.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ServiceError, WorkflowFailedError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { runTemporalCli, testConfig, waitFor, workflowBundle } from '../workflows/env';
import { startServerEnv, type ServerEnv } from './server-env';
import { scriptedActivities } from '../workflows/scripted-activities';
import { runStatusQuery, setSwitchingPolicyUpdate, stopRunUpdate } from '../../workflows/whale-run-messages';
import type { RunSummary } from '../../workflows/run-state';
import { badInput } from './bad-input-catalogue';

let env: ServerEnv;
const dir = mkdtempSync(path.join(tmpdir(), 'whale-badsrv-'));
before(async () => (env = await startServerEnv()));
after(async () => {
  await env?.teardown();
  rmSync(dir, { recursive: true, force: true });
});

const temporal = (...args: string[]) => runTemporalCli(env.address, ...args);

const Q = 'bad-input';

/** The run's failure: it must be a non-retryable InvalidRunConfig, with no workflow task retried and no activity scheduled. */
async function runFailure(workflowId: string): Promise<string> {
  const handle = env.client.workflow.getHandle(workflowId);
  const err = await handle.result().then(() => assert.fail(`${workflowId} completed`), (e: unknown) => e);
  assert.ok(err instanceof WorkflowFailedError, String(err));
  const cause = err.cause;
  assert.ok(cause instanceof ApplicationFailure, String(cause));
  assert.equal(cause.type, 'InvalidRunConfig');
  assert.equal(cause.nonRetryable, true);
  const events = (await handle.fetchHistory()).events ?? [];
  assert.equal(events.filter((e) => e.workflowTaskFailedEventAttributes).length, 0, 'the workflow task must not fail (a failing task is retried forever: a stuck run)');
  assert.equal(events.filter((e) => e.activityTaskScheduledEventAttributes).length, 0, 'nothing may run for a malformed config');
  return cause.message;
}

/**
 * The validator's rejection of an update. A call the server gives up on (a ServiceError: the loaded worker
 * did not answer in time) is not an answer, so it is sent again until the deadline.
 */
async function rejection(send: () => Promise<unknown>, timeoutMs = 120_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const err = await send().then(() => assert.fail('the update was accepted'), (e: unknown) => e);
    if (err instanceof WorkflowUpdateFailedError) return String((err.cause as Error).message);
    if (!(err instanceof ServiceError) || Date.now() > deadline) assert.fail(`expected the validator to reject the update, got ${String(err)}`);
  }
}

/** A scripted rollout batch held at a step until the test opens it. */
function hold(step: number) {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let reached = false;
  return { onRolloutBatch: async (s: number) => (s === step ? ((reached = true), opened) : undefined), open, reached: () => reached };
}

describe('malformed run configs through `temporal workflow start`', () => {
  it('fail the run at once with a non-retryable InvalidRunConfig naming every bad field', async () => {
    const s = scriptedActivities({ splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [], testScores: [], candidateScores: {} });
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue: Q, workflowBundle: await workflowBundle(), activities: s.activities });
    const inputFile = (name: string, value: unknown) => {
      const f = path.join(dir, name);
      writeFileSync(f, JSON.stringify(value));
      return ['--input-file', f];
    };
    const starts: [string, string[]][] = [
      ['start-several-bad-fields', inputFile('several.json', { version: 1, method: 'magic', seed: -1, weight: { learningRate: 5 } })],
      ['start-not-object', ['--input', '"math"']],
      ['start-no-input', []],
      ['start-missing-version', inputFile('noversion.json', { method: 'weights-only' })],
      ['start-bad-duration', inputFile('duration.json', { version: 1, execution: { modelTaskQueue: Q, fineTune: { heartbeatTimeout: 'soon' } } })],
      ['start-bad-ref', inputFile('ref.json', { version: 1, model: { baseCheckpoint: { kind: 'checkpoint', uri: 'cas://sha256/abc', sha256: 'abc', bytes: 3 } } })],
    ];
    await worker.runUntil(async () => {
      for (const [id, args] of starts) {
        const r = await temporal('workflow', 'start', '--type', 'whaleRun', '--task-queue', Q, '--workflow-id', id, ...args);
        assert.equal(r.code, 0, r.out);
      }
      for (const [id] of starts) assert.match(await runFailure(id), badInput(id).message, id);
    });
    assert.deepEqual(s.calls, [], 'no activity ran');
    const shown = await temporal('workflow', 'result', '-w', 'start-several-bad-fields');
    assert.match(shown.out, /InvalidRunConfig|invalid run config/, 'the CLI shows why the run failed');
  });
});

describe('wrong values mid-run through updates', () => {
  it('are rejected with the reason; the run keeps its policy and completes', async () => {
    const fixedHold = hold(2);
    const fixed = scriptedActivities({ splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [0.1, 0.2, 0.3], testScores: [0.1, 0.2], candidateScores: {}, lenient: true, onRolloutBatch: fixedHold.onRolloutBatch });
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue: Q, workflowBundle: await workflowBundle(), activities: fixed.activities });
    const policy = { kind: 'fixed', weightEpochs: 0.3, harnessRounds: 2 };
    const fixedConfig = testConfig(Q, { method: 'whale-fixed', switching: policy, budget: { totalWeightSteps: 3 } });
    const weightsOnlyConfig = testConfig(Q, { method: 'weights-only', budget: { totalWeightSteps: 3 } });
    const [summary, weightsOnly] = await worker.runUntil(async () => {
      const h = await env.client.workflow.start('whaleRun', { taskQueue: Q, workflowId: 'bad-updates', args: [fixedConfig] });
      const w = await env.client.workflow.start('whaleRun', { taskQueue: Q, workflowId: 'bad-updates-weights-only', args: [weightsOnlyConfig] });
      try {
        await waitFor('step 2 of the fixed run to be in flight', async () => (fixedHold.reached() ? true : undefined), 60_000);
        await waitFor('the weights-only run to be initialised', async () => ((await w.query(runStatusQuery)) ? true : undefined), 60_000);
        const bad: [string, WorkflowHandle, unknown][] = [
          ['update-policy-not-object', h, 'fast'],
          ['update-policy-wrong-type', h, { weightEpochs: 'soon' }],
          ['update-policy-unknown-kind', h, { kind: 'sometimes' }],
          ['update-policy-unknown-field', h, { harnessRound: 3 }],
          ['update-policy-wrong-method', w, { kind: 'patience' }],
        ];
        for (const [id, handle, arg] of bad) assert.match(await rejection(() => handle.executeUpdate(setSwitchingPolicyUpdate, { args: [arg] })), badInput(id).message, id);
        assert.match(await rejection(() => h.executeUpdate(stopRunUpdate, { args: [{ mode: 'now' as never }] })), badInput('update-stop-bad-mode').message);
        // Through the real CLI too: it exits non-zero and prints the validator's reason.
        // (Sent again if the server gave up waiting for the loaded worker: that is not the validator's answer.)
        const cli = await waitFor('the CLI to print the validator\'s answer', async () => {
          const r = await temporal('workflow', 'update', 'execute', '-w', 'bad-updates', '--name', 'setSwitchingPolicy', '--input', '{"harnessRounds":0}');
          return /invalid switching policy/.test(r.out) ? r : undefined;
        }, 120_000);
        assert.notEqual(cli.code, 0);
        assert.match(cli.out, badInput('update-policy-out-of-range').message);

        const status = await h.query(runStatusQuery);
        assert.deepEqual(status?.config.switching, policy, 'a rejected update changes nothing');
        assert.deepEqual(status?.policyChanges, []);
        assert.equal(status?.control.stop, null);
      } finally {
        fixedHold.open();
      }
      return Promise.all([h.result() as Promise<RunSummary>, w.result() as Promise<RunSummary>]);
    });
    assert.equal(summary.weightStepsDone, 3, 'the run went on and completed');
    assert.equal(summary.stoppedEarly, false);
    assert.equal(weightsOnly.weightStepsDone, 3);
  });
});
