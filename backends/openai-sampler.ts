// The OpenAI-compatible sampler backend: an OpenAIBackend per checkpoint, its model name from the configured
// name template ({sha256}) or, for a checkpoint pointer, the served model the pointer names. Each served
// model's context length is asked once.
import type { ModelBackend } from '../model';
import type { ArtifactStore } from '../store/artifact-store';
import type { SamplerBackend } from '../activities/model-backends';
import type { OpenAIRolloutConfig } from './config';
import { fetchMaxContext, OpenAIBackend } from './openai-backend';
import { readCheckpointPointer } from './checkpoint-pointer';
import { storedCheckpointProblem } from './base-checkpoint';

export function createOpenAISampler(config: OpenAIRolloutConfig, store: ArtifactStore, env: NodeJS.ProcessEnv = process.env): SamplerBackend {
  const apiKey = config.apiKeyEnv ? env[config.apiKeyEnv] : undefined;
  if (config.apiKeyEnv && !apiKey) throw new Error(`rollouts.apiKeyEnv names ${config.apiKeyEnv}, which is not set in the model worker's environment`);
  const contexts = new Map<string, Promise<number>>();
  return {
    async samplerFor(ref): Promise<ModelBackend> {
      const pointer = await readCheckpointPointer(store, ref);
      const model = pointer ? pointer.model : config.model.replaceAll('{sha256}', ref.sha256);
      let ctx = contexts.get(model);
      if (!ctx) {
        ctx = fetchMaxContext(config, model, apiKey);
        contexts.set(model, ctx);
        ctx.catch(() => contexts.delete(model));
      }
      return new OpenAIBackend({ config, model, apiKey, maxContext: await ctx });
    },
    baseCheckpointProblem: (ref, label) => storedCheckpointProblem(store, ref, label),
    close: async () => undefined,
  };
}
