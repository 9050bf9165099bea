// Harness runners the model worker keeps between activities, keyed by content hash: a harness loads into
// the sandbox once, then every rollout that names it reuses the loaded runner.
import { ApplicationFailure } from '@temporalio/activity';
import type { ArtifactStore } from '../store/artifact-store';
import type { ArtifactRef } from '../store/artifact-ref';
import type { HarnessRunner } from '../agent/harness-runner';
import type { SandboxPool } from '../harness-sandbox/pool';

export interface HarnessLoader {
  load(harness: ArtifactRef): Promise<HarnessRunner>;
  close(): Promise<void>;
}

export function createHarnessLoader(opts: { store: ArtifactStore; sandbox: SandboxPool }): HarnessLoader {
  const harnesses = new Map<string, Promise<HarnessRunner>>();
  return {
    async load(ref) {
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
      harnesses.clear();
    },
  };
}
