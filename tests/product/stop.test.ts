// `whale stop` through the real CLI against a real dev server, with scripted activities: the default
// finishes the step in flight, closes the phase and runs the final test evaluation; --abandon-step cancels
// the step and ends the run at once. Both runs complete (auditable: the audit explains every phase with no
// mismatch); stopping a run that is not running is a clear error.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTestWorker, ROOT, startTestServer, testConfig, waitFor } from '../workflows/env';
import { gate, scriptedActivities } from '../workflows/scripted-activities';
import { runStatusQuery } from '../../workflows/whale-run-messages';
import { buildTimeline, fetchHistories } from '../../audit/timeline';
import { explainPhases } from '../../audit/explain';
import type { RunSummary } from '../../workflows/run-state';

const execFileP = promisify(execFile);
let env: TestWorkflowEnvironment;
before(async () => (env = await startTestServer()));
after(async () => env?.teardown());

function whale(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return execFileP(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], {
    env: { ...process.env, WHALE_TEMPORAL_ADDRESS: env.address }, timeout: 180_000,
  });
}


async function auditMismatches(workflowId: string): Promise<number> {
  const phases = explainPhases(buildTimeline(workflowId, await fetchHistories(env.client, workflowId)));
  return phases.filter((p) => p.matches === false).length;
}

describe('whale stop', () => {
  it('finishes the step in flight, closes the phase and runs the final evaluation (--wait prints the summary)', async () => {
    const q = 'stop-finish';
    const atStep2 = gate();
    const s = scriptedActivities({
      splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], testScores: [0.1, 0.3], candidateScores: {},
      onRolloutBatch: async (step) => (step === 2 ? atStep2.wait() : undefined),
    });
    const worker = await createTestWorker(env, q, s.activities);
    const handle = await env.client.workflow.start('whaleRun', { taskQueue: q, workflowId: 'stop-finish-1', args: [testConfig(q, { method: 'weights-only', budget: { totalWeightSteps: 6 } })] });
    const summary = await worker.runUntil(async () => {
      await atStep2.reached;
      const cli = whale(['stop', 'stop-finish-1', '--wait', '--timeout', '3m']);
      await waitFor('the stop request to reach the run', async () => ((await handle.query(runStatusQuery))?.control.stop === 'finish-step' ? true : undefined), 120_000);
      atStep2.open();
      const { stdout } = await cli;
      assert.match(stdout, /stop \(finish-step\) sent to stop-finish-1/);
      assert.match(stdout, /run stop-finish-1: weights-only on test-domain \(stopped early\)/);
      return handle.result() as Promise<RunSummary>;
    });
    assert.equal(summary.stoppedEarly, true);
    assert.equal(summary.weightStepsDone, 2, 'step 2 (in flight when the stop came) is finished, no step 3 starts');
    assert.deepEqual(s.calls.filter((c) => c.activity === 'fineTuneStep').map((c) => c.detail), ['step 1', 'step 2']);
    assert.equal(summary.phases.at(-1)?.rule, 'stopped on request');
    assert.deepEqual(s.calls.filter((c) => c.activity === 'evaluateTest').map((c) => c.detail), ['initial', 'final']);
    assert.equal(summary.finalMeanAt8, 0.3);
    assert.equal(await auditMismatches('stop-finish-1'), 0);
  });

  it('with --abandon-step cancels the step in flight and ends the run without a final evaluation', async () => {
    const q = 'stop-abandon';
    const atStep2 = gate();
    const s = scriptedActivities({
      splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [0.1, 0.2, 0.3, 0.4], testScores: [0.1], candidateScores: {},
      onRolloutBatch: async (step) => (step === 2 ? atStep2.wait() : undefined),
    });
    const worker = await createTestWorker(env, q, s.activities);
    const handle = await env.client.workflow.start('whaleRun', { taskQueue: q, workflowId: 'stop-abandon-1', args: [testConfig(q, { method: 'weights-only', budget: { totalWeightSteps: 4 } })] });
    const summary = await worker.runUntil(async () => {
      await atStep2.reached;
      const { stdout } = await whale(['stop', 'stop-abandon-1', '--abandon-step']);
      assert.match(stdout, /stop \(abandon-step\) sent to stop-abandon-1/);
      // The held activity never returns a result the run waits for.
      const result = (await handle.result()) as RunSummary;
      atStep2.open();
      return result;
    });
    assert.equal(summary.stoppedEarly, true);
    assert.equal(summary.weightStepsDone, 1, 'the abandoned step 2 does not count');
    assert.deepEqual(s.calls.filter((c) => c.activity === 'fineTuneStep').map((c) => c.detail), ['step 1']);
    assert.deepEqual(s.calls.filter((c) => c.activity === 'evaluateTest').map((c) => c.detail), ['initial']);
    assert.equal(await auditMismatches('stop-abandon-1'), 0);

    const refused = await whale(['stop', 'stop-abandon-1']).then(() => null, (e: { code?: number; stderr?: string }) => e);
    assert.ok(refused, 'stopping a closed run must fail');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr ?? '', /run stop-abandon-1 is not running \(status COMPLETED\): there is nothing to stop/);
  });
});
