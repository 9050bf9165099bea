// The part of a fine-tune step every fine-tune backend shares: the step is keyed by the sha256 of its input,
// a repeat returns the stored result (first write wins, so a concurrent duplicate gets the first one), and
// the trajectories are read and split into accepted ones and kept/dropped calls the same way for all.
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { ArtifactStore } from '../store/artifact-store';
import type { ArtifactRef } from '../store/artifact-ref';
import { trajectoriesFromJsonl, type Trajectory } from '../agent/trajectory';
import type { FineTuneStepInput, FineTuneStepResult } from '../activities/types';

/** The step's trajectories, read once for the backend that trains on them. */
export interface StepTrajectories {
  /** sha256 of the step's input: names the stored result and the step's working files. */
  inputKey: string;
  trajectories: Trajectory[];
  /** Trajectories with reward strictly above the accept threshold. */
  accepted: Trajectory[];
  calls: { keptCalls: number; droppedCalls: number };
}

export function fineTuneKey(input: FineTuneStepInput): string {
  return createHash('sha256').update(JSON.stringify(input)).digest('hex');
}

/** Model calls of the accepted trajectories that RSFT trains and that it leaves out (for the audit). */
export function keptAndDropped(accepted: readonly Trajectory[]): { keptCalls: number; droppedCalls: number } {
  const calls = accepted.flatMap((t) => t.modelCalls);
  const keptCalls = calls.filter((c) => c.kept).length;
  return { keptCalls, droppedCalls: calls.length - keptCalls };
}

/** Nothing to train on: the step counts, the weights stay. */
export function unchangedResult(input: FineTuneStepInput, calls: StepTrajectories['calls']): FineTuneStepResult {
  return { checkpoint: input.checkpoint, updated: false, acceptedTrajectories: 0, acceptedTokens: 0, minibatches: 0, meanLoss: null, resumedFromMinibatch: 0, ...calls };
}

/**
 * The bytes match their hash, so a retry would read the same broken file: fail the step without retrying,
 * naming the artifact (the rollout batch that wrote it must be re-run, e.g. by a reset to before it).
 */
function readTrajectories(ref: ArtifactRef, text: string): Trajectory[] {
  try {
    return trajectoriesFromJsonl(text);
  } catch (err) {
    throw ApplicationFailure.nonRetryable(
      `trajectories ${ref.uri} (sha256 ${ref.sha256}, ${ref.bytes} bytes) cannot be trained on: ${(err as Error).message}. The file is stored as written, so retrying cannot help: reset the run to before the rollout batch that wrote it (docs/operations.md, "History, reset and resume").`,
      'CorruptArtifact',
    );
  }
}

/** Runs `train` once per distinct input: a stored result is returned as is; a new one is stored under the input's key. */
export async function idempotentFineTuneStep(
  store: ArtifactStore,
  input: FineTuneStepInput,
  train: (step: StepTrajectories) => Promise<FineTuneStepResult>,
): Promise<FineTuneStepResult> {
  const inputKey = fineTuneKey(input);
  const name = `fine-tune/${inputKey}`;
  const done = await store.lookupName(name);
  if (done) return JSON.parse((await store.get(done)).toString('utf8')) as FineTuneStepResult;

  const trajectories = readTrajectories(input.trajectories, (await store.get(input.trajectories)).toString('utf8'));
  const accepted = trajectories.filter((t) => t.reward > input.acceptThreshold);
  const result = await train({ inputKey, trajectories, accepted, calls: keptAndDropped(accepted) });
  const stored = await store.put('blob', JSON.stringify(result));
  const bound = await store.bindName(name, stored);
  // First write wins: a concurrent duplicate returns the result that was bound first.
  return bound.sha256 === stored.sha256 ? result : (JSON.parse((await store.get(bound)).toString('utf8')) as FineTuneStepResult);
}
