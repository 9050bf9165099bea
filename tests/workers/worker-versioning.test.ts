// Worker Versioning (opt-in) on a real dev server: a run starts PINNED on build A (the pre-built bundle's
// hash), build B becomes the deployment's current version while the run's first weight step is held, and at
// the next phase boundary the run continues as new onto B (guarded by patched()), finishes there, and both
// runs' histories replay against B's code. The promotion uses the documented `temporal worker deployment
// set-current-version` command.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { resolveWorkflowBundle } from '../../workers/workflow-bundle';
import { workerVersioning } from '../../workers/orchestration';
import { UPGRADE_AT_PHASE_BOUNDARY_PATCH } from '../../workflows/patches';
import type { RunSummary } from '../../workflows/run-state';
import { runTemporalCli, testConfig, waitFor } from '../workflows/env';
import { scriptedActivities } from '../workflows/scripted-activities';
import { startServerEnv, type ServerEnv } from '../faults/server-env';

let env: ServerEnv;
const work = mkdtempSync(path.join(tmpdir(), 'whale-versioning-'));
before(async () => (env = await startServerEnv()));
after(async () => {
  await env?.teardown();
  rmSync(work, { recursive: true, force: true });
});

const Q = 'versioning';
const DEPLOYMENT = `whale-test-${process.pid}`;
type History = temporal.api.history.v1.IHistory;

/** Build ids of the workers that completed the run's workflow tasks, in order, without repeats. */
function buildIds(history: History): string[] {
  const ids = (history.events ?? []).flatMap((e) => {
    const v = e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId;
    return v ? [v] : [];
  });
  return ids.filter((id, i) => ids[i - 1] !== id);
}
const patchIds = (history: History) => (history.events ?? []).flatMap((e) => {
  const a = e.markerRecordedEventAttributes;
  const data = a?.markerName === 'core_patch' ? a.details?.['patch-data']?.payloads?.[0]?.data : undefined;
  return data ? [(JSON.parse(Buffer.from(data).toString('utf8')) as { id: string }).id] : [];
});

/** `temporal worker deployment set-current-version`, as docs/operations.md writes it; retried until the version has registered. */
async function setCurrentVersion(buildId: string): Promise<void> {
  await waitFor(`build ${buildId} to become the current version`, async () => {
    const r = await runTemporalCli(env.address, 'worker', 'deployment', 'set-current-version', '--deployment-name', DEPLOYMENT, '--build-id', buildId, '--yes');
    return r.code === 0 ? true : undefined;
  }, 120_000);
}

describe('Worker Versioning: a run in flight moves to the new version at a phase boundary', () => {
  it('continues as new from build A onto build B, finishes on B, and both histories replay', async () => {
    const a = await resolveWorkflowBundle('rebuild', () => undefined);
    // Build B: the same workflow code with different bytes, so a different hash and build id.
    // The marker goes first: the bundle ends with its inline source map, which must stay the last line.
    const bCode = `// next build\n${readFileSync(a.codePath, 'utf8')}`;
    const bHash = createHash('sha256').update(bCode).digest('hex').slice(0, 16);
    const bPath = path.join(work, `${bHash}.js`);
    writeFileSync(bPath, bCode);

    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = false;
    const s = scriptedActivities({
      splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [0.1, 0.2], testScores: [0.1, 0.2], candidateScores: {}, lenient: true,
      // The first weight step waits on worker A until build B is current.
      onRolloutBatch: async (step) => {
        if (step !== 1) return;
        held = true;
        await released;
      },
    });
    const config = testConfig(Q, { method: 'weights-only', budget: { totalWeightSteps: 2 } });
    const versioned = (buildId: string, codePath: string) => Worker.create({
      connection: env.nativeConnection, taskQueue: Q, workflowBundle: { codePath }, activities: s.activities,
      workerDeploymentOptions: workerVersioning(buildId, { WHALE_WORKER_DEPLOYMENT: DEPLOYMENT }),
    });

    const workerA = await versioned(a.hash, a.codePath);
    const runA = workerA.run();
    let workerB: Worker | undefined;
    let runB: Promise<void> | undefined;
    try {
      await setCurrentVersion(a.hash);
      const handle = await env.client.workflow.start('whaleRun', { taskQueue: Q, workflowId: 'wv-moved', args: [config] });
      await waitFor('the run to hold its first weight step on build A', async () => (held ? true : undefined), 120_000);

      workerB = await versioned(bHash, bPath);
      runB = workerB.run();
      await setCurrentVersion(bHash);
      release();

      const summary = (await handle.result()) as RunSummary;
      assert.equal(summary.weightStepsDone, 2, 'the run finished its budget');
      assert.equal(summary.continuedAsNew, 1, 'one continue-as-new: the move to build B');

      const first = await env.client.workflow.getHandle('wv-moved', handle.firstExecutionRunId).fetchHistory();
      const can = (first.events ?? []).find((e) => e.workflowExecutionContinuedAsNewEventAttributes)?.workflowExecutionContinuedAsNewEventAttributes;
      assert.ok(can?.newExecutionRunId, 'the first run ended in continue-as-new');
      assert.deepEqual(buildIds(first), [a.hash], 'the first run ran on build A only (pinned)');
      assert.ok(patchIds(first).includes(UPGRADE_AT_PHASE_BOUNDARY_PATCH), `patched() marker recorded: ${patchIds(first).join(', ')}`);
      const second = await env.client.workflow.getHandle('wv-moved', can.newExecutionRunId).fetchHistory();
      assert.deepEqual(buildIds(second), [bHash], 'the continued run ran on build B only');
      assert.equal((second.events ?? []).at(-1)?.workflowExecutionCompletedEventAttributes !== undefined, true, 'the continued run completed');

      // The drain checks of the documented upgrade procedure answer for the old build.
      const described = await runTemporalCli(env.address, 'worker', 'deployment', 'describe-version', '--deployment-name', DEPLOYMENT, '--build-id', a.hash);
      assert.equal(described.code, 0, described.out);
      assert.match(described.out, new RegExp(a.hash));
      await waitFor('visibility to list the first run under build A', async () => {
        const r = await runTemporalCli(env.address, 'workflow', 'list', '-q', `TemporalWorkerDeploymentVersion = '${DEPLOYMENT}:${a.hash}'`);
        return r.code === 0 && r.out.includes('wv-moved') ? true : undefined;
      }, 60_000);

      for (const [name, history] of [['moved-run0', first], ['moved-run1', second]] as const) {
        await Worker.runReplayHistory({ workflowBundle: { codePath: bPath } }, history, name);
      }
    } finally {
      release();
      workerA.shutdown();
      workerB?.shutdown();
      await Promise.all([runA, runB]);
    }
  });
});
