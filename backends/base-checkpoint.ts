// The check of a run's base checkpoint that both sampler backends make at prepareRun: a project checkpoint
// must decode (a truncated or foreign file fails the run at once, not every later rollout); a checkpoint
// pointer passes here and is checked by the rollout backend that serves it.
import { decodeCheckpoint } from '../model';
import type { ArtifactRef } from '../store/artifact-ref';
import type { ArtifactStore } from '../store/artifact-store';
import { readCheckpointPointer } from './checkpoint-pointer';

/** Why the stored checkpoint cannot be a run's base, or null; `label` names it in the message. */
export async function storedCheckpointProblem(store: ArtifactStore, ref: ArtifactRef, label: string): Promise<string | null> {
  if (await readCheckpointPointer(store, ref)) return null;
  try {
    decodeCheckpoint(await store.get(ref), label);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
