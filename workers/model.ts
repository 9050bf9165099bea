// The model worker: chooses its sampler and fine-tune backends (embedded onnxruntime unless
// WHALE_MODEL_BACKENDS names a server or an external trainer), owns a pool of sandbox child processes for
// harness hooks, and serves rollout batches, fine-tune steps, test evaluation and harness scoring on the
// model task queue. On two cores, one model worker with concurrency 1 is right.
import * as path from 'node:path';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../temporal.config';
import { basePolicyOf, createDomainCache, seedHarnessOf } from './domain-cache';
import { DirectoryArtifactStore } from '../store/artifact-store';
import { SandboxPool } from '../harness-sandbox/pool';
// The rollout limits the base policies were pretrained under (system-owned, not harness-owned).
import { ROLLOUT_LIMITS } from '../training/rollout-limits';
import { createModelActivities } from '../activities/model-activities';
import type { FineTuneBackend, SamplerBackend } from '../activities/model-backends';
import { createHarnessLoader } from '../activities/harness-loader';
import { logContextInterceptor } from './log-context';
import { loadBackendsConfig, type ModelBackendsConfig } from '../backends/config';
import { createEmbeddedSampler } from '../backends/embedded-sampler';
import { createOpenAISampler } from '../backends/openai-sampler';
import { createEmbeddedFineTune } from '../backends/embedded-fine-tune';
import { createExternalFineTune } from '../backends/external-fine-tune';

export const PROJECT_ROOT = path.resolve(__dirname, '..');


export function createModelWorkerDeps(config: TemporalConfig, opts: { threads?: number; partialCheckpointEveryMs?: number; backends?: ModelBackendsConfig } = {}) {
  const artifactRoot = path.resolve(PROJECT_ROOT, config.artifactDir);
  const store = new DirectoryArtifactStore(artifactRoot);
  const threads = opts.threads ?? 2;
  // Rollouts and fine-tune steps go to the embedded runtime unless WHALE_MODEL_BACKENDS says otherwise.
  const backends = opts.backends ?? { rollouts: { kind: 'embedded' }, trainer: { kind: 'embedded' } };
  const sampler: SamplerBackend = backends.rollouts.kind === 'embedded'
    ? createEmbeddedSampler({ store, threads, maxBatchRows: 256 })
    : createOpenAISampler(backends.rollouts, store);
  const trainer: FineTuneBackend = backends.trainer.kind === 'embedded'
    ? createEmbeddedFineTune({ store, threads, partialCheckpointEveryMs: opts.partialCheckpointEveryMs })
    : createExternalFineTune({ store, artifactRoot, trainer: backends.trainer });
  // The sandbox's child processes start last: a backend configuration that fails above leaves nothing to close.
  const sandbox = new SandboxPool({ processes: 1 });
  const harnesses = createHarnessLoader({ store, sandbox });
  const activities = createModelActivities({
    store,
    sampler,
    trainer,
    harnesses,
    limits: ROLLOUT_LIMITS,
    archiveRoot: artifactRoot,
    domain: createDomainCache(),
    basePolicy: basePolicyOf,
    seedHarness: seedHarnessOf,
  });
  const close = async () => {
    await sampler.close();
    await harnesses.close();
    await sandbox.close();
  };
  return { store, sandbox, activities, close };
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
