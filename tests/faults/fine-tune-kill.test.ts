// Preemption during a fine-tune step, with real processes: the model worker is SIGKILLed while a step is
// in flight (after at least one partial checkpoint was heartbeated), a new one is started, and the run
// completes; the step resumes from its heartbeat, and in deterministic mode at 2 trainer threads (rows split
// across them) the checkpoint hash equals an uninterrupted run's with the same seed, step by step. Rows of
// 512+ tokens under a kill: tests/model/deterministic-threads.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startFaultCluster, activityResults, largestPayload, type FaultCluster } from '../../testbed/fault-cluster';
import { describeRun } from '../../cli/status';
import { waitFor } from '../workflows/env';
import type { RunSummary } from '../../workflows/run-state';
import type { FineTuneStepResult } from '../../activities/types';

let cluster: FaultCluster;
// The killed worker saves a partial checkpoint after every minibatch (the resume points). Its replacement
// finishes the resumed step and then runs the uninterrupted run without partial checkpoints (they cost about
// as much as the training and a run that is not killed needs none): so the equal hashes also show that
// saving partial checkpoints does not change what a step computes.
const KILLED_WORKER_ENV = { WHALE_PARTIAL_CHECKPOINT_MS: '0', WHALE_MODEL_THREADS: '2' };
const REPLACEMENT_WORKER_ENV = { WHALE_PARTIAL_CHECKPOINT_MS: String(3_600_000), WHALE_MODEL_THREADS: '2' };

before(async () => {
  cluster = await startFaultCluster();
  cluster.startWorker('orchestration');
  cluster.startWorker('model', KILLED_WORKER_ENV);
});
after(async () => cluster?.teardown());

const config = () => ({
  version: 1, method: 'weights-only', domain: 'math', seed: 11,
  // 32 prompts: about 20 accepted model calls, minibatches of 1, so the step outlasts the heartbeat throttle
  // (0.8 x 4 s) and the kill lands mid step (at 16 prompts the step can end before the server sees minibatch 1).
  weight: { promptsPerStep: 32, samplesPerPrompt: 8, minibatchSize: 1, learningRate: 1e-4, deterministic: true },
  budget: { totalWeightSteps: 1 },
  // The initial and final evaluations are not under test here: as small as D_test allows.
  test: { everyEpochs: 1, samplesPerTask: 2, taskLimit: 2 },
  execution: { fineTune: { heartbeatTimeout: '4s' }, rollout: { heartbeatTimeout: '10s' } },
});

describe('model worker killed during a fine-tune step', () => {
  it('resumes from the heartbeat and reaches the uninterrupted checkpoint hash', async (t) => {
    const q = cluster.config.taskQueues.orchestration;
    const handle = await cluster.client.workflow.start('whaleRun', { taskQueue: q, workflowId: 'ft-killed', args: [config()] });
    await waitFor('a fine-tune step with a partial checkpoint heartbeated', async () => {
      const v = await describeRun(cluster.client, 'ft-killed');
      const p = v.pending.find((a) => a.activityType === 'fineTuneStep');
      const hb = p?.heartbeat as { kind?: string; minibatch?: number } | undefined;
      return hb?.kind === 'fine-tune' && (hb.minibatch ?? 0) >= 1 ? true : undefined;
    }, 120_000);
    await cluster.kill('model');
    cluster.startWorker('model', REPLACEMENT_WORKER_ENV);
    const killed = await handle.result() as RunSummary;

    const clean = await cluster.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'ft-clean', args: [config()] }) as RunSummary;
    const cleanSteps = await activityResults<FineTuneStepResult>(cluster.client, 'ft-clean', 'fineTuneStep');
    assert.ok(cleanSteps.some((s) => s.updated && s.minibatches >= 3), `the uninterrupted run must train (several minibatches) for this test to mean anything: ${JSON.stringify(cleanSteps)} ${JSON.stringify((await activityResults<{ meanReward: number; accepted: number; rollouts: number }>(cluster.client, 'ft-clean', 'rolloutBatch')).map((r) => [r.meanReward, r.accepted, r.rollouts]))}`);

    const steps = await activityResults<FineTuneStepResult>(cluster.client, 'ft-killed', 'fineTuneStep');
    assert.ok(steps.some((s) => s.resumedFromMinibatch >= 1), `a step must have resumed from its heartbeat: ${JSON.stringify(steps.map((s) => s.resumedFromMinibatch))}`);
    assert.equal(killed.weightStepsDone, 1);
    assert.equal(killed.finalCheckpoint.sha256, clean.finalCheckpoint.sha256);
    t.diagnostic(`clean: ${JSON.stringify(cleanSteps.map((s) => ({ minibatches: s.minibatches, accepted: s.acceptedTrajectories })))}; killed run resumed from minibatch ${steps.map((s) => s.resumedFromMinibatch).join(',')}; final checkpoint ${killed.finalCheckpoint.sha256.slice(0, 16)} in both`);
    assert.deepEqual(steps.map((s) => s.checkpoint.sha256), cleanSteps.map((s) => s.checkpoint.sha256));
  });

  it('keeps every payload of a real run under 256 KiB', async (t) => {
    for (const id of ['ft-clean', 'ft-killed']) {
      const largest = await largestPayload(cluster.client, id);
      assert.ok(largest.bytes > 0);
      assert.ok(largest.bytes < 256 * 1024, `${id}: largest payload ${largest.bytes} bytes at ${largest.where}`);
      t.diagnostic(`${id}: largest payload ${largest.bytes} bytes (${largest.where})`);
    }
  });
});
