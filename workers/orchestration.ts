// The orchestration worker: workflows only (cheap, always on). It never runs activities, so a model or
// proposer worker can be preempted while runs wait safely in their queues.
import * as path from 'node:path';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../temporal.config';

export const WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', 'index.ts');

export async function createOrchestrationWorker(connection: NativeConnection, config: TemporalConfig, taskQueue = config.taskQueues.orchestration): Promise<Worker> {
  return Worker.create({
    connection,
    namespace: config.namespace,
    taskQueue,
    workflowsPath: WORKFLOWS_PATH,
    identity: `whale-orchestration@${process.pid}`,
  });
}
