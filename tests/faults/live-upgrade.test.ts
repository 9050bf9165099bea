// Live upgrade: a workflow code change rolled out while a run is in flight, at a phase boundary,
// guarded by patched(). On a real dev server with scripted activities: a run that completed on the old
// bundle, a run in flight whose orchestration worker is stopped at the boundary (its last weight step held
// on the activity worker) and replaced by a worker with the new bundle, and a run started on the new
// bundle. The in-flight run moves over cleanly at the boundary; every history replays against the new code
// (Worker.runReplayHistories); the new path is real: the old code cannot replay a history that took it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { ROOT, testConfig, waitFor, workflowBundle } from '../workflows/env';
import { startServerEnv, type ServerEnv } from './server-env';
import { scriptedActivities } from '../workflows/scripted-activities';
import type { WhaleActivities } from '../../activities/types';
import type { RunSummary } from '../../workflows/run-state';
import { FINAL_CHECK_PATCH } from './fixtures/live-upgrade-final-check';

let env: ServerEnv;
before(async () => (env = await startServerEnv()));
after(async () => env?.teardown());

const Q = 'live-upgrade';
const QA = 'live-upgrade-activities';
const config = testConfig(QA, { method: 'weights-only', budget: { totalWeightSteps: 2 } });

function evaluationLabels(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? []).flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes;
    if (a?.activityType?.name !== 'evaluateTest') return [];
    const data = a.input?.payloads?.[0]?.data;
    return data ? [(JSON.parse(Buffer.from(data).toString('utf8')) as { label: string }).label] : [];
  });
}
const markers = (history: temporal.api.history.v1.IHistory) => (history.events ?? []).filter((e) => e.markerRecordedEventAttributes).length;

describe('live upgrade of the workflow code at a phase boundary', () => {
  it('moves an in-flight run over with patched(); old and new histories replay against the new code', async () => {
    const oldBundle = await workflowBundle();
    const noop = () => undefined;
    const newBundle = await bundleWorkflowCode({
      workflowsPath: path.join(ROOT, 'workflows', 'index.ts'),
      workflowInterceptorModules: [path.join(__dirname, 'fixtures', 'live-upgrade-final-check.ts')],
      logger: { trace: noop, debug: noop, info: noop, warn: noop, error: (m: string) => console.error(m), log: noop },
    });

    const s = scriptedActivities({ splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [0.1, 0.2], testScores: [0.1, 0.2], candidateScores: {}, lenient: true });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = false;
    const activities: WhaleActivities = {
      ...s.activities,
      // The last weight step of the in-flight run waits on the activity worker while the orchestration worker is replaced.
      async fineTuneStep(input) {
        if (input.runId === 'lu-moved' && input.step === 2) {
          held = true;
          await released;
        }
        return s.activities.fineTuneStep(input);
      },
    };
    const activityWorker = await Worker.create({ connection: env.nativeConnection, taskQueue: QA, activities });
    const activityRun = activityWorker.run();
    try {
      const oldWorker = await Worker.create({ connection: env.nativeConnection, taskQueue: Q, workflowBundle: oldBundle });
      const oldRun = oldWorker.run();
      await env.client.workflow.execute('whaleRun', { taskQueue: Q, workflowId: 'lu-old', args: [config] });
      const moved = await env.client.workflow.start('whaleRun', { taskQueue: Q, workflowId: 'lu-moved', args: [config] });
      await waitFor('the in-flight run to reach its last weight step', async () => (held ? true : undefined), 120_000);
      oldWorker.shutdown();
      await oldRun;

      const newWorker = await Worker.create({ connection: env.nativeConnection, taskQueue: Q, workflowBundle: newBundle });
      const movedSummary = await newWorker.runUntil(async () => {
        release();
        const summary = (await moved.result()) as RunSummary;
        await env.client.workflow.execute('whaleRun', { taskQueue: Q, workflowId: 'lu-new', args: [config] });
        return summary;
      });
      assert.equal(movedSummary.weightStepsDone, 2, 'the in-flight run finished cleanly');
    } finally {
      release();
      activityWorker.shutdown();
      await activityRun;
    }

    const histories = await Promise.all(['lu-old', 'lu-moved', 'lu-new'].map(async (id) => ({ workflowId: id, history: await env.client.workflow.getHandle(id).fetchHistory() })));
    const [oldH, movedH, newH] = histories.map((h) => h.history);
    assert.deepEqual(evaluationLabels(oldH).slice(-1), ['final'], 'the old code has no final check');
    assert.equal(markers(oldH), 0);
    for (const [name, h] of [['the in-flight run (after the boundary)', movedH], ['the new run', newH]] as const) {
      assert.deepEqual(evaluationLabels(h).slice(-2), ['final-check', 'final'], `${name} takes the new path`);
      assert.equal(markers(h), 1, `${name} records the ${FINAL_CHECK_PATCH} marker`);
    }

    const failures: string[] = [];
    for await (const r of Worker.runReplayHistories({ workflowBundle: newBundle, replayName: 'live-upgrade' }, histories)) {
      if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
    }
    assert.deepEqual(failures, [], 'every history replays against the new code');
    // The change is a real change of commands: the old code cannot replay a history that took the new path.
    await assert.rejects(Worker.runReplayHistory({ workflowBundle: oldBundle }, newH, 'lu-new'), (e: Error) => e.name === 'DeterminismViolationError' && /[Nn]ondeterminism/.test(e.message));
  });
});
