// The model worker's resources with the configured rollout backend: the embedded sampler, or an
// OpenAIBackend per checkpoint (its model name from the name template or the checkpoint's pointer).
import type { ModelResources } from '../activities/model-resources';
import type { ArtifactStore } from '../store/artifact-store';
import type { ModelBackend } from '../model';
import type { ModelBackendsConfig } from './config';
import { fetchMaxContext, OpenAIBackend } from './openai-backend';
import { ApplicationFailure } from '@temporalio/common';
import { readCheckpointPointer } from './checkpoint-pointer';

export function withRolloutBackend(base: ModelResources, config: ModelBackendsConfig, store: ArtifactStore, env: NodeJS.ProcessEnv = process.env): ModelResources {
  const rollouts = config.rollouts;
  if (rollouts.kind === 'embedded') {
    return {
      ...base,
      async sampler(ref) {
        const pointer = await readCheckpointPointer(store, ref);
        // Not retryable: every attempt on this worker would refuse it the same way.
        if (pointer) {
          throw ApplicationFailure.nonRetryable(
            `checkpoint ${ref.uri} is a pointer to the served model ${pointer.model} (weights outside the store); the embedded sampler cannot run it. ` +
              'Start the model worker with an OpenAI-compatible rollout backend that serves it, e.g. ' +
              `WHALE_MODEL_BACKENDS='{"rollouts": {"kind": "openai", "baseUrl": "http://127.0.0.1:8000/v1", "api": "chat", "tokenizer": "foreign", "dialect": "transformers-serve", "maxContext": 1024, "maxConcurrency": 1}}' node bin/whale.js worker --queue model ` +
              '(docs/real-models.md); a folder exported from a project checkpoint converts back with `node bin/whale.js import <folder> --out <file.ckpt>`',
            'CheckpointPointer',
          );
        }
        return base.sampler(ref);
      },
    };
  }
  const apiKey = rollouts.apiKeyEnv ? env[rollouts.apiKeyEnv] : undefined;
  if (rollouts.apiKeyEnv && !apiKey) throw new Error(`rollouts.apiKeyEnv names ${rollouts.apiKeyEnv}, which is not set in the model worker's environment`);
  const contexts = new Map<string, Promise<number>>();
  return {
    async sampler(ref): Promise<ModelBackend> {
      const pointer = await readCheckpointPointer(store, ref);
      const model = pointer ? pointer.model : rollouts.model.replaceAll('{sha256}', ref.sha256);
      let ctx = contexts.get(model);
      if (!ctx) {
        ctx = fetchMaxContext(rollouts, model, apiKey);
        contexts.set(model, ctx);
        ctx.catch(() => contexts.delete(model));
      }
      return new OpenAIBackend({ config: rollouts, model, apiKey, maxContext: await ctx });
    },
    harness: (ref) => base.harness(ref),
    close: () => base.close(),
  };
}
