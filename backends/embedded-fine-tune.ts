// The embedded fine-tune backend: one SFT epoch of online RSFT on the onnxruntime trainer, over the kept
// model calls of the accepted trajectories, in minibatches of trajectories (or of calls, for runs recorded
// before that unit) -> a new checkpoint. Resumable: the heartbeat carries the minibatch cursor and a partial
// checkpoint, so a retry after a killed worker continues where the last one stopped (in deterministic mode
// to the same final hash). Idempotence comes from the shared step (fine-tune-step.ts).
import { DEFAULT_HYPERPARAMS, Trainer } from '../model';
import type { ArtifactStore } from '../store/artifact-store';
import { ArtifactRef } from '../store/artifact-ref';
import { acceptedExamples, runSftEpoch } from '../training/rsft';
import type { FineTuneStepInput, FineTuneStepResult } from '../activities/types';
import type { FineTuneBackend, FineTuneContext } from '../activities/model-backends';
import { idempotentFineTuneStep, unchangedResult } from './fine-tune-step';

export interface EmbeddedFineTuneOptions {
  store: ArtifactStore;
  /** Trainer threads (deterministic mode too: rows are split across them, see model/training/core.ts). */
  threads: number;
  /** Minimum time between partial checkpoints (the resume points of a killed step), ms; 0 saves every minibatch. */
  partialCheckpointEveryMs?: number;
}

interface FineTuneHeartbeat {
  kind: 'fine-tune';
  inputKey: string;
  /** Minibatches whose effect is in `partial`. */
  minibatch: number;
  total: number;
  partial: ArtifactRef;
}

function parseResume(details: unknown, inputKey: string): FineTuneHeartbeat | null {
  if (typeof details !== 'object' || details === null) return null;
  const d = details as Partial<FineTuneHeartbeat>;
  if (d.kind !== 'fine-tune' || d.inputKey !== inputKey || typeof d.minibatch !== 'number') return null;
  const ref = ArtifactRef.safeParse(d.partial);
  return ref.success ? { ...(d as FineTuneHeartbeat), partial: ref.data } : null;
}

export function runEmbeddedFineTuneStep(opts: EmbeddedFineTuneOptions, input: FineTuneStepInput, ctx: FineTuneContext): Promise<FineTuneStepResult> {
  return idempotentFineTuneStep(opts.store, input, async ({ inputKey, trajectories, accepted, calls }) => {
    const examples = acceptedExamples(trajectories, input.acceptThreshold);
    if (examples.length === 0) return unchangedResult(input, calls);
    const resume = parseResume(ctx.resumeFrom, inputKey);
    const runtime = { threads: opts.threads, deterministic: input.deterministic };
    const trainer = await Trainer.loadCheckpoint(opts.store, resume ? resume.partial : input.checkpoint, runtime);
    try {
      let lastSave = Date.now();
      let saved: FineTuneHeartbeat | null = resume;
      const every = opts.partialCheckpointEveryMs ?? 2_000;
      const epoch = await runSftEpoch(trainer, examples, {
        minibatchSize: input.minibatchSize,
        unit: input.minibatchUnit ?? 'calls',
        hyper: { ...DEFAULT_HYPERPARAMS, lr: input.learningRate, weightDecay: input.weightDecay, clipNorm: input.clipNorm },
        seed: input.seed,
        step: input.step,
        startMinibatch: resume?.minibatch ?? 0,
        onMinibatch: async (doneCount, total) => {
          ctx.throwIfCancelled();
          if (doneCount < total && Date.now() - lastSave >= every) {
            saved = { kind: 'fine-tune', inputKey, minibatch: doneCount, total, partial: await trainer.saveCheckpoint(opts.store) };
            lastSave = Date.now();
          }
          // Heartbeat details are replaced by each call: every beat carries the latest resumable cursor.
          ctx.heartbeat(saved ? { ...saved, progress: doneCount } : { kind: 'fine-tune-progress', progress: doneCount, total });
        },
      });
      const checkpoint = await trainer.saveCheckpoint(opts.store);
      return {
        checkpoint, updated: true, acceptedTrajectories: accepted.length, acceptedTokens: epoch.tokens, minibatches: epoch.minibatches,
        meanLoss: epoch.meanLoss, resumedFromMinibatch: resume?.minibatch ?? 0, ...calls,
      };
    } finally {
      await trainer.close();
    }
  });
}

export function createEmbeddedFineTune(opts: EmbeddedFineTuneOptions): FineTuneBackend {
  return { fineTuneStep: (input, ctx) => runEmbeddedFineTuneStep(opts, input, ctx) };
}
