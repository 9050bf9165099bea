// Graceful shutdown, with real processes: SIGTERM to the model worker in the middle of a rollout
// batch and again in the middle of a fine-tune step. The in-flight activity heartbeats and stops within the
// grace period (worker.shutdownGraceTime, here WHALE_SHUTDOWN_GRACE=1s, shorter than the rest of the step), the process exits 0, the artifact
// store holds only complete objects whose bytes hash to their names (no temp file, no half-written object),
// and after a new worker starts the run completes, the fine-tune step resuming from its last heartbeat.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { startFaultCluster, activityResults, type FaultCluster } from '../../testbed/fault-cluster';
import { describeRun } from '../../cli/status';
import { waitFor } from '../workflows/env';
import { ArtifactRef } from '../../store/artifact-ref';
import type { RunSummary } from '../../workflows/run-state';
import type { FineTuneStepResult, RolloutBatchResult } from '../../activities/types';

const GRACE_MS = 1_000;
const WORKER_ENV = { WHALE_PARTIAL_CHECKPOINT_MS: '0', WHALE_MODEL_THREADS: '1', WHALE_SHUTDOWN_GRACE: `${GRACE_MS / 1000}s` };
let cluster: FaultCluster;

before(async () => {
  cluster = await startFaultCluster();
  cluster.startWorker('orchestration');
  cluster.startWorker('model', WORKER_ENV);
});
after(async () => cluster?.teardown());

// The fine-tune step's heartbeat timeout is short so that the server shows its heartbeats often: the SDK sends
// them at most every 0.8 x the timeout, and the step (33 minibatches of one trajectory) can take under 16 s,
// so with 20 s the server could show none before the step ends. The worker re-sends its latest beat every
// second while a minibatch runs, so 4 s does not time out a working step.
const config = () => ({
  version: 1, method: 'weights-only', domain: 'math', seed: 11,
  weight: { promptsPerStep: 48, samplesPerPrompt: 8, minibatchSize: 1, learningRate: 1e-4, deterministic: true },
  budget: { totalWeightSteps: 1 },
  test: { everyEpochs: 1, samplesPerTask: 1, taskLimit: 4 },
  execution: { fineTune: { heartbeatTimeout: '4s' }, rollout: { heartbeatTimeout: '20s' }, evaluate: { heartbeatTimeout: '20s' } },
});

/** The store holds only complete objects: no temp file, every object's bytes hash to its name, every name points at one. */
function assertStoreComplete(where: string): number {
  const root = path.join(cluster.dir, 'artifacts');
  const objects = path.join(root, 'objects');
  let count = 0;
  for (const d of existsSync(objects) ? readdirSync(objects) : []) {
    for (const f of readdirSync(path.join(objects, d))) {
      assert.ok(!f.endsWith('.tmp'), `${where}: a temp file is left in the store: ${d}/${f}`);
      const sha = createHash('sha256').update(readFileSync(path.join(objects, d, f))).digest('hex');
      assert.equal(sha, d + f, `${where}: object ${d}/${f} does not hash to its name (partial or corrupt)`);
      count++;
    }
  }
  const names = path.join(root, 'names');
  const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  for (const file of existsSync(names) ? walk(names) : []) {
    assert.ok(!file.endsWith('.tmp'), `${where}: a temp name binding is left: ${file}`);
    const ref = ArtifactRef.parse(JSON.parse(readFileSync(file, 'utf8')));
    assert.ok(existsSync(path.join(objects, ref.sha256.slice(0, 2), ref.sha256.slice(2))), `${where}: name ${file} points at a missing object`);
  }
  return count;
}

/** SIGTERM; resolves the exit code and the time to exit. */
async function terminate(child: ChildProcess): Promise<{ code: number | null; ms: number }> {
  const t0 = Date.now();
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  const code = await exited;
  cluster.workers.delete('model');
  return { code, ms: Date.now() - t0 };
}

describe('SIGTERM to the model worker', () => {
  it('stops in-flight rollouts and fine-tune steps within the grace period, exits 0, leaves no partial artifact; the run completes', async (t) => {
    const id = 'graceful';
    const handle = await cluster.client.workflow.start('whaleRun', { taskQueue: cluster.config.taskQueues.orchestration, workflowId: id, args: [config()] });
    // A describe can fail transiently on a loaded dev server (namespace cache still warming up): poll on.
    const pending = async (type: string) => (await describeRun(cluster.client, id).catch(() => null))?.pending.find((a) => a.activityType === type);

    // 1. In the middle of a rollout batch: it has heartbeated progress through its turns.
    await waitFor('a rollout batch in progress', async () => ((await pending('rolloutBatch'))?.heartbeat ? true : undefined), 300_000);
    const rollout = await terminate(cluster.workers.get('model')!);
    assert.equal(rollout.code, 0, 'the worker exits 0 after a graceful shutdown');
    assert.ok(rollout.ms < GRACE_MS + 30_000, `the worker took ${rollout.ms} ms to stop (grace ${GRACE_MS} ms)`);
    const afterRollout = assertStoreComplete('after SIGTERM during rollouts');
    cluster.startWorker('model', WORKER_ENV);

    // 2. In the middle of a fine-tune step: it has heartbeated a partial checkpoint after at least one minibatch.
    // Two waits: the retried rollout batch runs first on one thread (minutes on a loaded machine), then the
    // step's minibatch heartbeats (the server sees them at most every 3.2 s here).
    await waitFor('the fine-tune step to start (after the retried rollout batch)', async () => ((await pending('fineTuneStep')) ? true : undefined), 900_000);
    await waitFor('a fine-tune step with a partial checkpoint heartbeated', async () => {
      const step = await pending('fineTuneStep');
      // Gone from the pending list: it ended (or a describe failed; the next poll tells which).
      if (!step && (await activityResults<FineTuneStepResult>(cluster.client, id, 'fineTuneStep').catch(() => [])).length > 0) {
        assert.fail('the fine-tune step finished before the server showed a heartbeat with a partial checkpoint (a shorter heartbeat timeout shows them sooner)');
      }
      const hb = step?.heartbeat as { kind?: string; minibatch?: number } | undefined;
      return hb?.kind === 'fine-tune' && (hb.minibatch ?? 0) >= 1 ? true : undefined;
    }, 300_000);
    const fineTune = await terminate(cluster.workers.get('model')!);
    assert.equal(fineTune.code, 0);
    assert.ok(fineTune.ms < GRACE_MS + 30_000, `the worker took ${fineTune.ms} ms to stop (grace ${GRACE_MS} ms)`);
    const afterFineTune = assertStoreComplete('after SIGTERM during a fine-tune step');
    cluster.startWorker('model', WORKER_ENV);

    const summary = (await handle.result()) as RunSummary;
    assert.equal(summary.weightStepsDone, 1);
    const steps = await activityResults<FineTuneStepResult>(cluster.client, id, 'fineTuneStep');
    t.diagnostic(`SIGTERM during rollouts: exit ${rollout.code} after ${rollout.ms} ms; during a fine-tune step: exit ${fineTune.code} after ${fineTune.ms} ms; step ${JSON.stringify(steps.map((s) => [s.resumedFromMinibatch, s.minibatches]))}`);
    assert.equal(steps.length, 1);
    assert.ok(steps[0].resumedFromMinibatch >= 1, `the step resumed from its last heartbeat, not from scratch: ${steps[0].resumedFromMinibatch}`);
    assert.equal((await activityResults<RolloutBatchResult>(cluster.client, id, 'rolloutBatch')).length, 1);
    const final = assertStoreComplete('after the run');
    t.diagnostic(`SIGTERM during rollouts: exit ${rollout.code} after ${rollout.ms} ms; during a fine-tune step: exit ${fineTune.code} after ${fineTune.ms} ms (grace ${GRACE_MS} ms); the step resumed from minibatch ${steps[0].resumedFromMinibatch}/${steps[0].minibatches}; store objects ${afterRollout} -> ${afterFineTune} -> ${final}, all complete`);
  });
});
