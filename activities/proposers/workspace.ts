// A proposer's workspace: a private copy of the phase archive (D_harness material only) with empty
// candidate slots, and the collector that takes back only the slot files and pending_eval.json. Files of
// the archive copy are fingerprinted first, so a proposer that overwrites or deletes them is caught.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { HarnessArchive } from '../archive';
import { WORKSPACE, slotFile, type PendingEvalEntry } from './types';

/** Largest candidate file taken (a harness is a few KiB; the contract caps prompts at 16 KiB each). */
export const MAX_CANDIDATE_BYTES = 256 * 1024;

export interface Workspace {
  dir: string;
  /** sha256 of every archive file copied in, by relative path. */
  fingerprint: Map<string, string>;
}

async function walk(root: string, rel = ''): Promise<Array<{ rel: string; kind: 'file' | 'other' }>> {
  let entries;
  try {
    entries = await fs.readdir(path.join(root, rel), { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: Array<{ rel: string; kind: 'file' | 'other' }> = [];
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await walk(root, r)));
    else out.push({ rel: r, kind: e.isFile() ? 'file' : 'other' });
  }
  return out;
}

const sha = async (file: string): Promise<string> => createHash('sha256').update(await fs.readFile(file)).digest('hex');

/** Copies the archive (no temp files) into a fresh directory and fingerprints the copy. */
export async function createWorkspace(archive: HarnessArchive, parent: string = os.tmpdir()): Promise<Workspace> {
  await fs.mkdir(parent, { recursive: true });
  const dir = await fs.mkdtemp(path.join(parent, 'whale-proposer-'));
  await fs.mkdir(archive.dir, { recursive: true });
  await fs.cp(archive.dir, dir, { recursive: true, filter: (src) => !src.endsWith('.tmp') });
  const fingerprint = new Map<string, string>();
  for (const f of await walk(dir)) if (f.kind === 'file') fingerprint.set(f.rel, await sha(path.join(dir, f.rel)));
  await fs.mkdir(path.join(dir, WORKSPACE.slotsDir), { recursive: true });
  return { dir, fingerprint };
}

export async function removeWorkspace(ws: Workspace): Promise<void> {
  await fs.rm(ws.dir, { recursive: true, force: true });
}

export interface CollectedCandidate {
  slot: number;
  source: string;
  entry: PendingEvalEntry;
}

export interface Collected {
  candidates: CollectedCandidate[];
  /** Archive files the proposer changed or deleted (any entry fails the round). */
  tampered: string[];
  /** Things ignored: files outside the slots, bad slot files, a missing or unreadable pending_eval.json. */
  notes: string[];
}

function entryFor(i: number, pending: PendingEvalEntry[]): PendingEvalEntry {
  const keys = new Set([slotFile(i), `c${i}`, `c${i}.ts`, `./${slotFile(i)}`]);
  const byFile = pending.find((e) => (e.file && keys.has(e.file)) || (e.name && keys.has(e.name)));
  if (byFile) return byFile;
  return pending.every((e) => !e.file) ? (pending[i - 1] ?? {}) : {};
}

/** Takes back only the slot files and pending_eval.json; reports tampering with the archive copy. */
export async function collectCandidates(ws: Workspace, count: number): Promise<Collected> {
  const notes: string[] = [];
  const tampered: string[] = [];
  const files = await walk(ws.dir);
  const present = new Set(files.map((f) => f.rel));
  for (const [rel, hash] of ws.fingerprint) {
    if (!present.has(rel)) tampered.push(`${rel} (deleted)`);
    else if (files.find((f) => f.rel === rel)?.kind !== 'file' || (await sha(path.join(ws.dir, rel))) !== hash) tampered.push(`${rel} (modified)`);
  }
  const allowed = (rel: string) =>
    ws.fingerprint.has(rel) || rel === WORKSPACE.pendingEval || rel === WORKSPACE.skill || rel === WORKSPACE.task || rel.startsWith(`${WORKSPACE.notesDir}/`) || rel.startsWith(`${WORKSPACE.slotsDir}/`);
  const extra = files.filter((f) => !allowed(f.rel)).map((f) => f.rel);
  if (extra.length) notes.push(`ignored ${extra.length} file(s) outside the slots: ${extra.slice(0, 10).join(', ')}`);

  let pending: PendingEvalEntry[] = [];
  try {
    const file = path.join(ws.dir, WORKSPACE.pendingEval);
    const st = await fs.lstat(file);
    if (!st.isFile() || st.size > MAX_CANDIDATE_BYTES) throw new Error(`not a regular file of at most ${MAX_CANDIDATE_BYTES} bytes`);
    const parsed = JSON.parse(await fs.readFile(file, 'utf8')) as { candidates?: unknown };
    if (Array.isArray(parsed.candidates)) pending = parsed.candidates.filter((e): e is PendingEvalEntry => typeof e === 'object' && e !== null);
    else notes.push(`${WORKSPACE.pendingEval} has no "candidates" array`);
  } catch (err) {
    notes.push(`${WORKSPACE.pendingEval} missing or unreadable (${(err as Error).message.split('\n')[0]})`);
  }

  const candidates: CollectedCandidate[] = [];
  for (let i = 1; i <= count; i++) {
    const file = path.join(ws.dir, slotFile(i));
    let st;
    try {
      st = await fs.lstat(file);
    } catch {
      continue;
    }
    if (!st.isFile()) {
      notes.push(`${slotFile(i)} is not a regular file: ignored`);
      continue;
    }
    if (st.size === 0 || st.size > MAX_CANDIDATE_BYTES) {
      notes.push(`${slotFile(i)} has ${st.size} bytes (allowed 1..${MAX_CANDIDATE_BYTES}): ignored`);
      continue;
    }
    candidates.push({ slot: i, source: await fs.readFile(file, 'utf8'), entry: entryFor(i, pending) });
  }
  return { candidates, tampered, notes };
}
