// Heavy objects the model worker keeps between activities: an ONNX sampler for the checkpoint in use and
// loaded harness runners, keyed by content hash (a new checkpoint or harness loads once, then is reused).
import type { ArtifactStore } from '../store/artifact-store';
import type { ArtifactRef } from '../store/artifact-ref';
import type { ModelBackend } from '../model/backend';
import type { HarnessRunner } from '../agent/harness-runner';
import { loadCheckpoint, OrtSampler } from '../model';
import type { SandboxPool } from '../harness-sandbox/pool';
import { ApplicationFailure } from '@temporalio/activity';

export interface ModelResources {
  sampler(checkpoint: ArtifactRef): Promise<ModelBackend>;
  harness(harness: ArtifactRef): Promise<HarnessRunner>;
  close(): Promise<void>;
}

export interface ModelResourceOptions {
  store: ArtifactStore;
  sandbox: SandboxPool;
  /** Sampler threads. */
  threads: number;
  maxBatchRows: number;
}

export function createModelResources(opts: ModelResourceOptions): ModelResources {
  // One sampler at a time: RSFT moves to a new checkpoint every step, and a sampler holds its weights.
  let current: { sha: string; sampler: Promise<OrtSampler> } | null = null;
  const harnesses = new Map<string, Promise<HarnessRunner>>();

  return {
    async sampler(ref) {
      if (current?.sha !== ref.sha256) {
        const previous = current;
        current = {
          sha: ref.sha256,
          sampler: loadCheckpoint(opts.store, ref).then((ck) => OrtSampler.fromCheckpoint(ck, { threads: opts.threads, maxBatchRows: opts.maxBatchRows })),
        };
        if (previous) void previous.sampler.then((s) => s.close(), () => undefined);
      }
      try {
        return await current.sampler;
      } catch (err) {
        current = null;
        throw err;
      }
    },
    async harness(ref) {
      let runner = harnesses.get(ref.sha256);
      if (!runner) {
        runner = (async () => {
          const source = (await opts.store.get(ref)).toString('utf8');
          const loaded = await opts.sandbox.loadHarness(source);
          if (!loaded.ok) {
            // A harness that does not load is the run's input at fault, not the worker: do not retry.
            throw ApplicationFailure.nonRetryable(`harness ${ref.sha256.slice(0, 12)} does not load: ${loaded.failure.kind}: ${loaded.failure.reason}`, 'InvalidHarness');
          }
          return loaded.runner;
        })();
        harnesses.set(ref.sha256, runner);
        runner.catch(() => harnesses.delete(ref.sha256));
      }
      return runner;
    },
    async close() {
      if (current) await (await current.sampler.catch(() => null))?.close();
      current = null;
      harnesses.clear();
    },
  };
}
