// The model worker: owns the ONNX sessions (sampler, trainer) and a pool of sandbox child processes for
// harness hooks, and serves rollout batches, fine-tune steps, test evaluation and harness scoring on the
// model task queue. On two cores, one model worker with concurrency 1 is right.
import * as path from 'node:path';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../temporal.config';
import { basePolicyOf, createDomainCache, seedHarnessOf } from './domain-cache';
import { DirectoryArtifactStore } from '../store/artifact-store';
import { SandboxPool } from '../harness-sandbox/pool';
// The rollout limits the base policies were pretrained under (system-owned, not harness-owned).
import { ROLLOUT_LIMITS } from '../training/corpus';
import { createModelActivities } from '../activities/model-activities';
import { createModelResources } from '../activities/model-resources';
import { logContextInterceptor } from './log-context';
import { loadBackendsConfig, type ModelBackendsConfig } from '../backends/config';
import { withRolloutBackend } from '../backends/model-resources';
import { externalFineTuneActivity } from '../backends/external-fine-tune';

export const PROJECT_ROOT = path.resolve(__dirname, '..');


export function createModelWorkerDeps(config: TemporalConfig, opts: { threads?: number; partialCheckpointEveryMs?: number; backends?: ModelBackendsConfig } = {}) {
  const artifactRoot = path.resolve(PROJECT_ROOT, config.artifactDir);
  const store = new DirectoryArtifactStore(artifactRoot);
  const sandbox = new SandboxPool({ processes: 1 });
  const threads = opts.threads ?? 2;
  // Rollouts and fine-tune steps go to the embedded runtime unless WHALE_MODEL_BACKENDS says otherwise.
  const backends = opts.backends ?? { rollouts: { kind: 'embedded' }, trainer: { kind: 'embedded' } };
  const resources = withRolloutBackend(createModelResources({ store, sandbox, threads, maxBatchRows: 256 }), backends, store);
  const activities = createModelActivities({
    store,
    resources,
    threads,
    limits: ROLLOUT_LIMITS,
    partialCheckpointEveryMs: opts.partialCheckpointEveryMs,
    archiveRoot: artifactRoot,
    domain: createDomainCache(),
    basePolicy: basePolicyOf,
    seedHarness: seedHarnessOf,
  });
  if (backends.trainer.kind !== 'embedded') activities.fineTuneStep = externalFineTuneActivity({ store, artifactRoot, trainer: backends.trainer });
  return { store, sandbox, resources, activities, close: async () => (await resources.close(), await sandbox.close()) };
}

export async function createModelWorker(connection: NativeConnection, config: TemporalConfig): Promise<{ worker: Worker; close: () => Promise<void> }> {
  const env = process.env.WHALE_PARTIAL_CHECKPOINT_MS;
  const deps = createModelWorkerDeps(config, {
    threads: Number(process.env.WHALE_MODEL_THREADS ?? 2),
    partialCheckpointEveryMs: env !== undefined && env !== '' ? Number(env) : undefined,
    backends: loadBackendsConfig(),
  });
  // A failed start (e.g. the namespace does not exist yet, and the caller tries again) must not leak the deps.
  const worker = await Worker.create({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueues.model,
    activities: deps.activities,
    maxConcurrentActivityTaskExecutions: config.worker.modelConcurrency,
    shutdownGraceTime: config.worker.shutdownGraceTime as `${number}s`,
    identity: `whale-model@${process.pid}`,
    interceptors: { activity: [logContextInterceptor] },
  }).catch(async (err: unknown) => {
    await deps.close();
    throw err;
  });
  return { worker, close: deps.close };
}
