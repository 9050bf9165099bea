// Multi-worker operation with real processes: two orchestration workers, three model workers and two
// proposer workers poll one dev server and share one artifact directory. The model worker running a
// rollout batch is SIGKILLed mid-batch; the batch is retried on another model worker after its heartbeat
// timeout and the run completes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { startScaleCluster, type ScaleCluster } from '../../testbed/scale-cluster';
import { waitFor } from '../../testbed/env';
import type { RunSummary } from '../../workflows/run-state';

let cluster: ScaleCluster;
const modelWorkers = new Map<number, ChildProcess>();

before(async () => {
  cluster = await startScaleCluster();
  for (let i = 0; i < 2; i++) cluster.startWorker('orchestration', `orchestration-${i}`);
  for (let i = 0; i < 2; i++) cluster.startWorker('proposer', `proposer-${i}`);
  for (let i = 0; i < 3; i++) {
    const child = cluster.startWorker('model', `model-${i}`, { WHALE_MODEL_THREADS: '1' });
    modelWorkers.set(child.pid as number, child);
  }
});
after(async () => cluster?.teardown());

// Small: a rollout batch long enough to be killed in flight (32 rollouts), a harness phase for the proposers.
const runConfig = () => ({
  version: 1, method: 'whale-fixed', domain: 'math', seed: 4,
  weight: { promptsPerStep: 8, samplesPerPrompt: 4, minibatchSize: 8 },
  switching: { kind: 'fixed', weightEpochs: 0.001, harnessRounds: 2 },
  harness: { candidatesPerRound: 1, taskLimit: 4 },
  budget: { totalWeightSteps: 2 },
  test: { everyEpochs: 1, samplesPerTask: 1, taskLimit: 4 },
  execution: { rollout: { heartbeatTimeout: '10s' }, evaluate: { heartbeatTimeout: '10s' } },
});

interface StartedActivity {
  type: string;
  identity: string;
  attempt: number;
}

/** Every completed activity: its type, the worker identity of the attempt that completed it, and that attempt. */
async function completedActivities(workflowId: string): Promise<StartedActivity[]> {
  const history = await cluster.client.workflow.getHandle(workflowId).fetchHistory();
  const scheduled = new Map<string, string>();
  const started = new Map<string, { identity: string; attempt: number }>();
  const out: StartedActivity[] = [];
  for (const e of history.events ?? []) {
    if (e.activityTaskScheduledEventAttributes) scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
    const s = e.activityTaskStartedEventAttributes;
    if (s) started.set(String(s.scheduledEventId), { identity: s.identity ?? '', attempt: s.attempt ?? 1 });
    const c = e.activityTaskCompletedEventAttributes;
    if (c) out.push({ type: scheduled.get(String(c.scheduledEventId)) ?? '', ...(started.get(String(c.scheduledEventId)) as { identity: string; attempt: number }) });
  }
  return out;
}

describe('several workers of each kind', () => {
  it('moves a killed model worker\'s rollout batch to another model worker and completes the run', async (t) => {
    const id = 'multi-worker-run';
    const handle = await cluster.client.workflow.start('whaleRun', { taskQueue: cluster.config.taskQueues.orchestration, workflowId: id, args: [runConfig()] });
    // A rollout batch that has heartbeated at least once: the worker is mid-batch.
    const victim = await waitFor('a rollout batch in flight on a model worker', async () => {
      const d = await handle.describe();
      const p = d.raw.pendingActivities?.find((a) => a.activityType?.name === 'rolloutBatch' && a.lastWorkerIdentity && a.heartbeatDetails?.payloads?.length);
      const pid = Number(/whale-model@(\d+)/.exec(p?.lastWorkerIdentity ?? '')?.[1]);
      return modelWorkers.has(pid) ? pid : undefined;
    }, 900_000);
    await cluster.kill(modelWorkers.get(victim) as ChildProcess);
    t.diagnostic(`killed model worker ${victim} mid rollout batch`);

    const summary = (await handle.result()) as RunSummary;
    assert.equal(summary.weightStepsDone, 2);
    assert.ok(summary.phases.some((p) => p.kind === 'harness'));
    const done = await completedActivities(id);
    const retried = done.filter((a) => a.type === 'rolloutBatch' && a.attempt >= 2);
    assert.ok(retried.length >= 1, `the killed batch must have been retried: ${JSON.stringify(done)}`);
    for (const a of retried) assert.notEqual(a.identity, `whale-model@${victim}`, 'the retry must run on another model worker');
    const modelIds = new Set(done.filter((a) => a.identity.startsWith('whale-model@')).map((a) => a.identity));
    const proposerIds = new Set(done.filter((a) => a.identity.startsWith('whale-proposer@')).map((a) => a.identity));
    t.diagnostic(`CPU used by the server and workers: ${cluster.cpuSeconds().toFixed(0)} s`);
    t.diagnostic(`model workers that completed activities: ${[...modelIds].join(', ')}; proposer workers: ${[...proposerIds].join(', ')}; retried on ${retried.map((r) => r.identity).join(', ')}`);
    assert.ok(proposerIds.size >= 1, 'a proposer worker must have served the harness phase');
  });
});
