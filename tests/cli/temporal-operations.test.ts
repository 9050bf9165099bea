// Every operation docs/operations.md documents, run with the real `temporal` CLI binary against a real dev
// server: start from a JSON file, list by search-attribute queries, query status, pause/resume by signal,
// change the switching policy and stop by update, export a history and replay it, reset to a phase
// boundary, and resume after the workers were down. Activities are scripted doubles; the CLI is real.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createTestWorker, startTestServer, runTemporalCli, testConfig, waitFor, workflowBundle } from '../workflows/env';
import { scriptedActivities } from '../workflows/scripted-activities';

let env: TestWorkflowEnvironment;
const dir = mkdtempSync(path.join(tmpdir(), 'whale-ops-'));
before(async () => (env = await startTestServer()));
after(async () => {
  await env?.teardown();
  rmSync(dir, { recursive: true, force: true });
});

const temporal = (...args: string[]) => runTemporalCli(env.address, ...args);
async function ok(...args: string[]): Promise<string> {
  const r = await temporal(...args);
  assert.equal(r.code, 0, `temporal ${args.join(' ')} failed:\n${r.out}`);
  return r.out;
}
async function listIds(query: string): Promise<string[]> {
  const rows = JSON.parse((await ok('workflow', 'list', '-q', query, '--output', 'json')) || '[]') as { execution: { workflowId: string } }[];
  return rows.map((r) => r.execution.workflowId);
}

const QUEUE = 'ops';
const script = (onRolloutBatch?: (step: number) => Promise<void>) => scriptedActivities({
  onRolloutBatch,
  splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], testScores: [0.1, 0.25, 0.3, 0.35],
  candidateScores: { 'harness-phase-1/incoming': { successRate: 0.5, meanTurns: 2 }, 'harness-phase-1/r1-c1': { successRate: 0.6, meanTurns: 2 } },
  lenient: true,
});

describe('operating runs with the temporal CLI', () => {
  it('starts a run from a JSON file while workers are down; it resumes when they come up', async () => {
    const file = path.join(dir, 'run.json');
    writeFileSync(file, JSON.stringify(testConfig(QUEUE, { method: 'weights-only', budget: { totalWeightSteps: 8 } })));
    await ok('workflow', 'start', '--type', 'whaleRun', '--task-queue', QUEUE, '--workflow-id', 'ops-1', '--input-file', file);
    // Step 2 waits until the pause signal is sent (so the run pauses after it), step 4 until the stop update
    // has answered (so the run cannot finish before the update lands).
    let pauseSent!: () => void;
    const paused = new Promise<void>((r) => (pauseSent = r));
    let stopAnswered!: () => void;
    const stopped = new Promise<void>((r) => (stopAnswered = r));
    const s = script(async (step) => (step === 2 ? paused : step === 4 ? stopped : undefined));
    const worker = await createTestWorker(env, QUEUE, s.activities);
    await worker.runUntil(async () => {
     try {
      await waitFor('the first weight step', async () => (s.calls.some((c) => c.activity === 'fineTuneStep') ? true : undefined));

      // pause by signal; list by search attribute; query status
      await ok('workflow', 'signal', '-w', 'ops-1', '--name', 'pause');
      pauseSent();
      await waitFor('ops-1 listed as paused', async () => ((await listIds("WhaleRunState = 'paused'")).includes('ops-1') ? true : undefined));
      const status = JSON.parse(await ok('workflow', 'query', '-w', 'ops-1', '--name', 'status', '--output', 'json')) as { queryResult: [{ control: { paused: boolean } }] };
      assert.equal(status.queryResult[0].control.paused, true);
      assert.ok((await listIds("WhaleMethod = 'weights-only' AND WhalePhase = 'weight-1'")).includes('ops-1'));

      // resume by signal, then stop gracefully by update
      await ok('workflow', 'signal', '-w', 'ops-1', '--name', 'resume');
      await waitFor('step 4 after resume', async () => (s.calls.some((c) => c.detail.startsWith('step 4')) ? true : undefined));
      assert.ok((await listIds("WhaleRunState = 'running'")).includes('ops-1'));
      const stop = await ok('workflow', 'update', 'execute', '-w', 'ops-1', '--name', 'stopRun', '--input', '{"mode":"finish-step"}');
      assert.match(stop, /finish-step/);
      stopAnswered();
      await ok('workflow', 'result', '-w', 'ops-1');
     } finally {
      pauseSent();
      stopAnswered(); // never leave the held activity (and so the worker's shutdown) hanging on a failure
     }
    });
    assert.ok((await listIds('WhaleBestScore >= 0.25')).includes('ops-1'), 'list by best score');
    assert.ok(!(await listIds('WhaleBestScore > 0.9')).includes('ops-1'));
  });

  it('changes the switching policy by update, rejecting an invalid one with a reason', async () => {
    const file = path.join(dir, 'fixed.json');
    writeFileSync(file, JSON.stringify(testConfig(QUEUE, { method: 'whale-fixed', switching: { kind: 'fixed', weightEpochs: 0.2, harnessRounds: 2 }, harness: { candidatesPerRound: 1 }, budget: { totalWeightSteps: 4 } })));
    await ok('workflow', 'start', '--type', 'whaleRun', '--task-queue', QUEUE, '--workflow-id', 'ops-2', '--input-file', file);
    await ok('workflow', 'signal', '-w', 'ops-2', '--name', 'pause'); // durable before any worker runs
    const s = script();
    const worker = await createTestWorker(env, QUEUE, s.activities);
    await worker.runUntil(async () => {
      await waitFor('ops-2 paused', async () => ((await listIds("WhaleRunState = 'paused'")).includes('ops-2') ? true : undefined));
      const bad = await temporal('workflow', 'update', 'execute', '-w', 'ops-2', '--name', 'setSwitchingPolicy', '--input', '{"kind":"fixed","weightEpochs":-2}');
      assert.notEqual(bad.code, 0);
      assert.match(bad.out, /invalid switching policy: weightEpochs/);
      const good = await ok('workflow', 'update', 'execute', '-w', 'ops-2', '--name', 'setSwitchingPolicy', '--input', '{"weightEpochs":0.1}');
      assert.match(good, /weightEpochs:0\.2/, 'the update returns the previous policy');
      await ok('workflow', 'signal', '-w', 'ops-2', '--name', 'resume');
      await ok('workflow', 'result', '-w', 'ops-2');
    });
    assert.deepEqual(s.calls.filter((c) => c.activity === 'rolloutBatch').length, 4);
  });

  it('exports a history that replays, and resets a run to a phase boundary', async () => {
    const file = path.join(dir, 'hist.json');
    const out = await ok('workflow', 'show', '-w', 'ops-2', '--output', 'json');
    writeFileSync(file, out);
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, JSON.parse(readFileSync(file, 'utf8')), 'ops-2');

    // The boundary between weight phase 1 and harness phase 1: the workflow task that scheduled round 0.
    const events = (JSON.parse(out) as { events: { eventId: string; eventType: string; activityTaskScheduledEventAttributes?: { activityType: { name: string }; workflowTaskCompletedEventId: string } }[] }).events;
    const firstHarness = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType.name === 'evaluateHarness');
    assert.ok(firstHarness, 'the run must have a harness phase');
    const boundary = firstHarness.activityTaskScheduledEventAttributes!.workflowTaskCompletedEventId;
    const s = script();
    const worker = await createTestWorker(env, QUEUE, s.activities);
    await worker.runUntil(async () => {
      const reset = await ok('workflow', 'reset', '-w', 'ops-2', '--event-id', String(boundary), '--reason', 'test: re-run the harness phase');
      assert.match(reset, /Resetting workflow ops-2 to event ID/);
      await waitFor('the reset run to finish', async () => {
        const d = JSON.parse(await ok('workflow', 'describe', '-w', 'ops-2', '--output', 'json')) as { workflowExecutionInfo: { status: string } };
        return d.workflowExecutionInfo.status === 'WORKFLOW_EXECUTION_STATUS_COMPLETED' ? true : undefined;
      });
    });
    // Only the work after the boundary ran again: no rollouts of weight phase 1, a fresh harness phase.
    assert.equal(s.calls.filter((c) => c.activity === 'prepareRun').length, 0);
    assert.ok(s.calls.some((c) => c.activity === 'evaluateHarness' && c.detail === 'harness-phase-1/incoming'));
    // Weight phases of 1 step after the policy update: the reset re-runs steps 2-4, never step 1.
    assert.deepEqual(s.calls.filter((c) => c.activity === 'rolloutBatch').map((c) => c.detail.split(' cursor')[0]), ['step 2', 'step 3', 'step 4']);
  });
});
