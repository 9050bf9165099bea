// The embedded sampler backend: an onnxruntime sampler for the checkpoint in use, loaded once and reused
// until a rollout names another checkpoint (RSFT moves to a new one every step; a sampler holds its weights).
// A checkpoint pointer (weights served elsewhere) is refused with the commands that can run it.
import { ApplicationFailure } from '@temporalio/common';
import { loadCheckpoint, OrtSampler } from '../model';
import type { ArtifactStore } from '../store/artifact-store';
import type { SamplerBackend } from '../activities/model-backends';
import { readCheckpointPointer } from './checkpoint-pointer';
import { storedCheckpointProblem } from './base-checkpoint';

export interface EmbeddedSamplerOptions {
  store: ArtifactStore;
  /** Sampler threads. */
  threads: number;
  maxBatchRows: number;
}

export function createEmbeddedSampler(opts: EmbeddedSamplerOptions): SamplerBackend {
  // One sampler at a time.
  let current: { sha: string; sampler: Promise<OrtSampler> } | null = null;
  return {
    async samplerFor(ref) {
      const pointer = await readCheckpointPointer(opts.store, ref);
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
    baseCheckpointProblem: (ref, label) => storedCheckpointProblem(opts.store, ref, label),
    async close() {
      if (current) await (await current.sampler.catch(() => null))?.close();
      current = null;
    },
  };
}
