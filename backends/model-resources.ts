// The model worker's resources with the configured rollout backend: the embedded sampler, or an
// OpenAIBackend per checkpoint (its model name from the name template or the checkpoint's pointer).
import type { ModelResources } from '../activities/model-resources';
import type { ArtifactStore } from '../store/artifact-store';
import type { ModelBackend } from '../model';
import type { ModelBackendsConfig } from './config';
import { fetchMaxContext, OpenAIBackend } from './openai-backend';
import { readCheckpointPointer } from './checkpoint-pointer';

export function withRolloutBackend(base: ModelResources, config: ModelBackendsConfig, store: ArtifactStore, env: NodeJS.ProcessEnv = process.env): ModelResources {
  const rollouts = config.rollouts;
  if (rollouts.kind === 'embedded') {
    return {
      ...base,
      async sampler(ref) {
        if (await readCheckpointPointer(store, ref)) throw new Error(`checkpoint ${ref.uri} is a pointer to weights outside the store (an external trainer's adapter); the embedded sampler cannot load it: configure an OpenAI-compatible rollout backend (docs/scale-out.md)`);
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
