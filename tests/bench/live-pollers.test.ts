// Which queues `whale bench compare --workers auto` finds without a live worker, on a real dev server with a
// real worker: a polling worker's queue counts as polled, and once the worker is gone its poller, which the
// server keeps listing with the time of its last poll, stops counting when that time is older than the window.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { livePollers, POLLER_LIVE_MS, unpolledKinds } from '../../cli/local-processes';
import type { TemporalConfig } from '../../temporal.config';
import { startTestServer, waitFor } from '../workflows/env';

let env: TestWorkflowEnvironment;
const config = { taskQueues: { orchestration: 'lp-orchestration', model: 'lp-model', proposer: 'lp-proposer' } } as TemporalConfig;
const ACTIVITY = temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY;

before(async () => {
  env = await startTestServer();
});
after(async () => {
  await env?.teardown();
});

describe('live pollers', () => {
  it('a stopped worker\'s poller stops counting once its last poll is older than the window', async () => {
    assert.ok(POLLER_LIVE_MS > 60_000, 'longer than a long poll (about 55 s measured), so an idle live worker keeps counting');
    assert.deepEqual(await unpolledKinds(env.client, config), ['orchestration', 'model', 'proposer']);
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue: config.taskQueues.model, activities: { noop: async () => undefined } });
    const running = worker.run();
    try {
      await waitFor('the model queue to be polled', async () => ((await livePollers(env.client, config.taskQueues.model, ACTIVITY)) > 0 ? true : undefined), 30_000);
      assert.deepEqual(await unpolledKinds(env.client, config), ['orchestration', 'proposer']);
    } finally {
      worker.shutdown();
      await running;
    }
    const stoppedAt = Date.now();
    // The server still lists the stopped worker's poller: under the default window it counts a while longer...
    assert.deepEqual(await unpolledKinds(env.client, config), ['orchestration', 'proposer']);
    // ...and with a 2 s window it stops counting within seconds (it never polls again).
    await waitFor('the stopped poller to age past a 2 s window', async () => ((await unpolledKinds(env.client, config, 2_000)).includes('model') ? true : undefined), 30_000);
    assert.ok(Date.now() - stoppedAt < POLLER_LIVE_MS, 'well before the default window ends');
    const res = await env.client.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: config.taskQueues.model }, taskQueueType: ACTIVITY });
    assert.ok((res.pollers ?? []).length > 0, 'the server still lists the stopped poller: only its age tells it is gone');
  });
});
