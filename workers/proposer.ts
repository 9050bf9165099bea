// The proposer worker: proposes harness candidates (built-in search, a coding-agent CLI or an
// OpenAI-compatible model), validates them in its own sandbox pool, and writes the phase archive, on the
// proposer task queue. It never loads the model runtime. The environment is read here (the coding agent's
// keys, the API key variable), never in a run config.
import * as path from 'node:path';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../temporal.config';
import { createDomainCache } from './domain-cache';
import { DirectoryArtifactStore } from '../store/artifact-store';
import { SandboxPool } from '../harness-sandbox/pool';
import { createProposerActivities } from '../activities/proposer-activities';

const PROJECT_ROOT = path.resolve(__dirname, '..');

export function createProposerWorkerDeps(config: TemporalConfig, env: NodeJS.ProcessEnv = process.env) {
  const artifactRoot = path.resolve(PROJECT_ROOT, config.artifactDir);
  const store = new DirectoryArtifactStore(artifactRoot);
  const sandbox = new SandboxPool({ processes: 1 });
  const activities = createProposerActivities({
    store,
    artifactRoot,
    sandbox,
    env,
    domain: createDomainCache(),
  });
  return { store, sandbox, activities, close: () => sandbox.close() };
}

export async function createProposerWorker(connection: NativeConnection, config: TemporalConfig): Promise<{ worker: Worker; close: () => Promise<void> }> {
  const deps = createProposerWorkerDeps(config);
  // A failed start (e.g. the namespace does not exist yet, and the caller tries again) must not leak the deps.
  const worker = await Worker.create({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueues.proposer,
    activities: deps.activities,
    maxConcurrentActivityTaskExecutions: config.worker.proposerConcurrency,
    shutdownGraceTime: config.worker.shutdownGraceTime as `${number}s`,
    identity: `whale-proposer@${process.pid}`,
  }).catch(async (err: unknown) => {
    await deps.close();
    throw err;
  });
  return { worker, close: deps.close };
}
