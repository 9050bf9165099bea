// What the model activities need from the machinery that samples and trains: a sampler backend (where
// rollouts generate) and a fine-tune backend (where a step trains). The worker picks an implementation from
// backends/ (embedded onnxruntime, an OpenAI-compatible server, an external trainer) and passes it in.
import type { ArtifactRef } from '../store/artifact-ref';
import type { ModelBackend } from '../model';
import type { FineTuneStepInput, FineTuneStepResult } from './types';

export interface SamplerBackend {
  /** A sampler over a checkpoint's weights (a backend may keep it loaded while the checkpoint stays the same). */
  samplerFor(checkpoint: ArtifactRef): Promise<ModelBackend>;
  /**
   * Why `checkpoint` cannot be a run's base checkpoint (a truncated or foreign file), or null. Asked once, by
   * prepareRun, so a bad file fails the run at once instead of every later rollout; `label` names it.
   */
  baseCheckpointProblem(checkpoint: ArtifactRef, label: string): Promise<string | null>;
  close(): Promise<void>;
}

/** What the activity gives a fine-tune step: its heartbeat, its cancellation, and where a killed attempt stopped. */
export interface FineTuneContext {
  heartbeat(details: unknown): void;
  throwIfCancelled(): void;
  /** The last heartbeat of a previous attempt of this activity, if any (a backend that can resume reads it). */
  resumeFrom?: unknown;
}

export interface FineTuneBackend {
  /** One RSFT step: idempotent (a repeat with equal input returns the stored result; first write wins). */
  fineTuneStep(input: FineTuneStepInput, ctx: FineTuneContext): Promise<FineTuneStepResult>;
}
