// The fine-tune step of online RSFT: accepted trajectories -> one SFT epoch over their kept model calls, in
// minibatches of trajectories (or of calls, for runs recorded before that unit) -> a new checkpoint.
// Idempotent (a repeat with equal inputs returns the stored result; first write wins) and resumable (the
// heartbeat carries the minibatch cursor and a partial checkpoint, so a retry after a killed worker
// continues where the last one stopped; in deterministic mode the final hash is the same).
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { DEFAULT_HYPERPARAMS, Trainer } from '../model';
import { ArtifactRef } from '../store/artifact-ref';
import { trajectoriesFromJsonl, type Trajectory } from '../agent/trajectory';
import { acceptedExamples, runSftEpoch } from '../training/rsft';
import type { FineTuneStepInput, FineTuneStepResult } from './types';
import type { ModelActivityDeps } from './model-activities';

interface FineTuneHeartbeat {
  kind: 'fine-tune';
  inputKey: string;
  /** Minibatches whose effect is in `partial`. */
  minibatch: number;
  total: number;
  partial: ArtifactRef;
}

export interface FineTuneContext {
  heartbeat(details: unknown): void;
  throwIfCancelled(): void;
  /** The last heartbeat of a previous attempt of this activity, if any. */
  resumeFrom: unknown;
  /** Minimum time between partial checkpoints (ms); each minibatch is saved when 0. */
  partialEveryMs?: number;
}

/** Model calls of the accepted trajectories that RSFT trains and that it leaves out (for the audit). */
export function keptAndDropped(accepted: readonly Trajectory[]): { keptCalls: number; droppedCalls: number } {
  const calls = accepted.flatMap((t) => t.modelCalls);
  const keptCalls = calls.filter((c) => c.kept).length;
  return { keptCalls, droppedCalls: calls.length - keptCalls };
}

export function fineTuneKey(input: FineTuneStepInput): string {
  return createHash('sha256').update(JSON.stringify(input)).digest('hex');
}

function parseResume(details: unknown, inputKey: string): FineTuneHeartbeat | null {
  if (typeof details !== 'object' || details === null) return null;
  const d = details as Partial<FineTuneHeartbeat>;
  if (d.kind !== 'fine-tune' || d.inputKey !== inputKey || typeof d.minibatch !== 'number') return null;
  const ref = ArtifactRef.safeParse(d.partial);
  return ref.success ? { ...(d as FineTuneHeartbeat), partial: ref.data } : null;
}

/**
 * The bytes match their hash, so a retry would read the same broken file: fail the step without retrying,
 * naming the artifact (the rollout batch that wrote it must be re-run, e.g. by a reset to before it).
 */
function readTrajectories(ref: ArtifactRef, text: string) {
  try {
    return trajectoriesFromJsonl(text);
  } catch (err) {
    throw ApplicationFailure.nonRetryable(
      `trajectories ${ref.uri} (sha256 ${ref.sha256}, ${ref.bytes} bytes) cannot be trained on: ${(err as Error).message}. The file is stored as written, so retrying cannot help: reset the run to before the rollout batch that wrote it (docs/operations.md, "History, reset and resume").`,
      'CorruptArtifact',
    );
  }
}

export async function runFineTuneStep(deps: ModelActivityDeps, input: FineTuneStepInput, ctx: FineTuneContext): Promise<FineTuneStepResult> {
  const inputKey = fineTuneKey(input);
  const name = `fine-tune/${inputKey}`;
  const done = await deps.store.lookupName(name);
  if (done) return JSON.parse((await deps.store.get(done)).toString('utf8')) as FineTuneStepResult;

  const trajectories = readTrajectories(input.trajectories, (await deps.store.get(input.trajectories)).toString('utf8'));
  const accepted = trajectories.filter((t) => t.reward > input.acceptThreshold);
  const examples = acceptedExamples(trajectories, input.acceptThreshold);
  const calls = keptAndDropped(accepted);
  let result: FineTuneStepResult;
  if (examples.length === 0) {
    // Nothing accepted: the step counts, the weights stay.
    result = { checkpoint: input.checkpoint, updated: false, acceptedTrajectories: 0, acceptedTokens: 0, minibatches: 0, meanLoss: null, resumedFromMinibatch: 0, ...calls };
  } else {
    const resume = parseResume(ctx.resumeFrom, inputKey);
    const runtime = input.deterministic ? { deterministic: true } : { threads: deps.threads };
    const trainer = await Trainer.loadCheckpoint(deps.store, resume ? resume.partial : input.checkpoint, runtime);
    try {
      let lastSave = Date.now();
      let saved: FineTuneHeartbeat | null = resume;
      const every = ctx.partialEveryMs ?? 2_000;
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
            saved = { kind: 'fine-tune', inputKey, minibatch: doneCount, total, partial: await trainer.saveCheckpoint(deps.store) };
            lastSave = Date.now();
          }
          // Heartbeat details are replaced by each call: every beat carries the latest resumable cursor.
          ctx.heartbeat(saved ? { ...saved, progress: doneCount } : { kind: 'fine-tune-progress', progress: doneCount, total });
        },
      });
      const checkpoint = await trainer.saveCheckpoint(deps.store);
      result = {
        checkpoint, updated: true, acceptedTrajectories: accepted.length, acceptedTokens: epoch.tokens, minibatches: epoch.minibatches,
        meanLoss: epoch.meanLoss, resumedFromMinibatch: resume?.minibatch ?? 0, ...calls,
      };
    } finally {
      await trainer.close();
    }
  }
  const stored = await deps.store.put('blob', JSON.stringify(result));
  const bound = await deps.store.bindName(name, stored);
  // First write wins: a concurrent duplicate returns the result that was bound first.
  return bound.sha256 === stored.sha256 ? result : (JSON.parse((await deps.store.get(bound)).toString('utf8')) as FineTuneStepResult);
}
