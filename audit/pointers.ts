// Which weights a run on a served model trained: its checkpoints are pointers (small store objects naming a
// model folder or served name), so the history's hashes alone do not say where the weights are. Read from
// the artifact store when the audit runs where the store is; absent objects (removed by gc, another
// machine's store) are simply not named.
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { readCheckpointPointer } from '../backends/checkpoint-pointer';
import { DirectoryArtifactStore } from '../store/artifact-store';
import type { ArtifactRef } from '../store/artifact-ref';
import type { Timeline } from './timeline';

/** sha256 -> the model a pointer names, for the run's start checkpoint and every step's checkpoint. */
export async function pointerModels(t: Timeline, storeRoot: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  if (!existsSync(path.join(storeRoot, 'objects'))) return out;
  const store = new DirectoryArtifactStore(storeRoot);
  const refs: ArtifactRef[] = [];
  if (t.config?.model.baseCheckpoint) refs.push(t.config.model.baseCheckpoint);
  for (const s of t.steps) if (s.fineTune?.checkpoint) refs.push(s.fineTune.checkpoint);
  for (const ref of refs) {
    if (out[ref.sha256]) continue;
    const p = await readCheckpointPointer(store, ref).catch(() => null);
    if (p) out[ref.sha256] = p.model;
  }
  return out;
}

/** The summary's section on served weights: where the start and each step's weights are (none: no lines). */
export function pointerLines(t: Timeline, models: Record<string, string>): string[] {
  if (Object.keys(models).length === 0) return [];
  const lines = ['## Served weights (checkpoint pointers)', '', 'The run trained a served model: each checkpoint is a pointer to a model folder (or served name).', '', '| weights | checkpoint | model |', '|---|---|---|'];
  const start = t.config?.model.baseCheckpoint;
  if (start) lines.push(`| start | \`${start.sha256.slice(0, 12)}\` | ${models[start.sha256] ? `\`${models[start.sha256]}\`` : '-'} |`);
  for (const s of t.steps) {
    const ck = s.fineTune?.checkpoint;
    if (ck) lines.push(`| after step ${s.step}${s.fineTune?.updated === false ? ' (not updated)' : ''} | \`${ck.sha256.slice(0, 12)}\` | ${models[ck.sha256] ? `\`${models[ck.sha256]}\`` : '-'} |`);
  }
  return [...lines, ''];
}
