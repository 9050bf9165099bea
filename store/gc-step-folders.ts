// Retention of external-trainer step folders (external-trainer/<key>/ in the artifact store: a step's request,
// its dataset and the trainer's checkpoint folders). A folder is kept while a kept checkpoint pointer names a
// path inside it (a live or retained run's weights, which an inference server may be serving) or while it is
// young; otherwise it is removed whole: a 0.5B full fine-tune writes about 1 GB per step.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const STEP_FOLDERS = 'external-trainer';
/** Pointers are tiny JSON (backends/checkpoint-pointer.ts); larger objects are not read. */
const POINTER_LIMIT_BYTES = 4096;

export interface StepFolderEntry { key: string; dir: string; bytes: number; files: number; newestMs: number }
export interface GcStepFolder { key: string; bytes: number; files: number }

/** Size, file count and newest modification time of every file under `dir` (the folder's own time too). */
export async function folderStats(dir: string): Promise<{ bytes: number; files: number; newestMs: number } | null> {
  let root: import('node:fs').Stats;
  try {
    root = await fs.stat(dir);
  } catch {
    return null;
  }
  let bytes = 0;
  let files = 0;
  let newestMs = root.mtimeMs;
  const walk = async (d: string): Promise<void> => {
    const entries = await fs.readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const p = path.join(d, e.name);
      const st = await fs.lstat(p).catch(() => null);
      if (!st) continue;
      newestMs = Math.max(newestMs, st.mtimeMs);
      if (st.isDirectory()) await walk(p);
      else {
        bytes += st.size;
        files += 1;
      }
    }
  };
  await walk(dir);
  return { bytes, files, newestMs };
}

export async function scanStepFolders(root: string): Promise<StepFolderEntry[]> {
  const base = path.join(root, STEP_FOLDERS);
  const entries = await fs.readdir(base, { withFileTypes: true }).catch(() => []);
  const out: StepFolderEntry[] = [];
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const dir = path.join(base, e.name);
    const st = await folderStats(dir);
    if (st) out.push({ key: e.name, dir, ...st });
  }
  return out.sort((a, b) => a.key.localeCompare(b.key));
}

/** The local paths a stored checkpoint pointer names (its model, and its uri when that is a file URL); none for other objects. */
export async function pointerPaths(file: string, bytes: number): Promise<string[]> {
  if (bytes > POINTER_LIMIT_BYTES) return [];
  try {
    const json = JSON.parse(await fs.readFile(file, 'utf8')) as { whaleCheckpointPointer?: unknown; model?: unknown; uri?: unknown };
    if (json.whaleCheckpointPointer !== 1) return [];
    const out: string[] = [];
    if (typeof json.model === 'string' && path.isAbsolute(json.model)) out.push(path.resolve(json.model));
    if (typeof json.uri === 'string' && json.uri.startsWith('file://')) out.push(path.resolve(fileURLToPath(json.uri)));
    return out;
  } catch {
    return [];
  }
}

/** The step folder key a path lies in, or null when it is outside the store's step folders. */
export function stepFolderOf(root: string, p: string): string | null {
  const rel = path.relative(path.join(root, STEP_FOLDERS), p);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return null;
  return rel.split(path.sep)[0];
}
