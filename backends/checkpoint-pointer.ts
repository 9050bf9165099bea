// A checkpoint pointer: an external trainer's new weights that live outside the artifact store (e.g. a LoRA
// adapter a vLLM server loads by name). Stored as a small 'checkpoint' artifact, so the workflow's references
// stay one type; the OpenAI backend sends its model name, and the embedded sampler refuses it clearly.
import { z } from 'zod';
import type { ArtifactRef } from '../store/artifact-ref';
import type { ArtifactStore } from '../store/artifact-store';

export const CheckpointPointer = z.strictObject({
  whaleCheckpointPointer: z.literal(1),
  /** The model (or adapter) name an inference server serves these weights under. */
  model: z.string().min(1),
  /** Where the weights are, for people and trainers (e.g. the adapter's path); not read by WHALE. */
  uri: z.string().optional(),
  /** The pointer this one was trained from (lineage). */
  parent: z.string().optional(),
});
export type CheckpointPointer = z.infer<typeof CheckpointPointer>;

/** Pointers are tiny JSON; real checkpoints are megabytes, so only small artifacts are read to check. */
export async function readCheckpointPointer(store: ArtifactStore, ref: ArtifactRef): Promise<CheckpointPointer | null> {
  if (ref.bytes > 4096) return null;
  const text = (await store.get(ref)).toString('utf8');
  if (!text.startsWith('{')) return null;
  try {
    const parsed = CheckpointPointer.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export function putCheckpointPointer(store: ArtifactStore, pointer: CheckpointPointer): Promise<ArtifactRef> {
  return store.put('checkpoint', JSON.stringify(CheckpointPointer.parse(pointer)));
}
