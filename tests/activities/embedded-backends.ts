// The model activities' backends as the model worker builds them by default (embedded onnxruntime sampler
// and trainer, harnesses loaded into a real sandbox pool), sized for tests.
import type { ArtifactStore } from '../../store/artifact-store';
import type { SandboxPool } from '../../harness-sandbox/pool';
import { createEmbeddedSampler } from '../../backends/embedded-sampler';
import { createEmbeddedFineTune } from '../../backends/embedded-fine-tune';
import { createHarnessLoader } from '../../activities/harness-loader';
import type { ModelActivityDeps } from '../../activities/model-activities';

export function embeddedBackends(opts: { store: ArtifactStore; sandbox: SandboxPool; partialCheckpointEveryMs?: number }): Pick<ModelActivityDeps, 'sampler' | 'trainer' | 'harnesses'> & { close(): Promise<void> } {
  const sampler = createEmbeddedSampler({ store: opts.store, threads: 1, maxBatchRows: 64 });
  const trainer = createEmbeddedFineTune({ store: opts.store, threads: 1, partialCheckpointEveryMs: opts.partialCheckpointEveryMs });
  const harnesses = createHarnessLoader({ store: opts.store, sandbox: opts.sandbox });
  return { sampler, trainer, harnesses, close: async () => (await sampler.close(), await harnesses.close()) };
}
