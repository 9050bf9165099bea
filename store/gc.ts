// Retention for the directory artifact store: which objects, name bindings and harness archives no live or
// retained run references, and removing them. The references themselves come from the caller (the CLI
// gathers them from Temporal: store/run-references.ts); this module only knows the store's layout:
// objects/<2 hex>/<62 hex>, names/<name>.json (a bound ArtifactRef), archives/<archiveKey>/.
//
// Safety rules (docs/operations.md): nothing younger than the grace age is removed; nothing written since
// the earliest start of an activity still in flight is removed (its results are not in history yet); a
// reachable JSON object keeps every hash it mentions (a fine-tune result keeps its checkpoint); a name
// binding is kept while its target, or anything its target mentions, is kept (the idempotency cache of a
// live run's step), and bindings under `pins/` are always kept. Each file is checked again right before it
// is removed, so an object re-stored (touched) after the plan was made survives. External-trainer step
// folders go with the checkpoint pointers that name them (store/gc-step-folders.ts).
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { folderStats, pointerPaths, scanStepFolders, stepFolderOf, STEP_FOLDERS, type GcStepFolder } from './gc-step-folders';

/** Everything live runs reference, gathered from Temporal (or written by hand in tests). */
export interface LiveReferences {
  /** sha256 hex strings mentioned by live or retained runs, plus pinned ones. */
  hashes: Set<string>;
  /** Harness archive keys mentioned by live or retained runs. */
  archiveKeys: Set<string>;
  /** Keep anything modified at or after this time (ms since epoch): the start of the oldest activity in flight. */
  protectSinceMs: number | null;
}

export interface GcOptions {
  /** Files modified within this many ms before `nowMs` are kept whatever references them. */
  graceMs: number;
  nowMs?: number;
}

export interface GcObject { sha256: string; bytes: number; kind: string; ageMs: number }
export interface GcName { name: string; target: string; bytes: number }
export interface GcArchive { key: string; bytes: number; files: number }
export interface GcTempFile { file: string; bytes: number }

export interface GcPlan {
  root: string;
  /** Files modified at or after this time are never removed (now minus the grace age). */
  cutoffMs: number;
  objects: GcObject[];
  names: GcName[];
  archives: GcArchive[];
  tempFiles: GcTempFile[];
  /** external-trainer/<key>/ folders no kept checkpoint pointer names (a trainer's request, dataset and weights). */
  stepFolders: GcStepFolder[];
  /** Bytes the plan would free. */
  bytes: number;
  kept: { objects: number; bytes: number; names: number; archives: number; stepFolders: number };
}

const HEX64 = /(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])/g;
/** JSON objects up to this size are scanned for the hashes they mention. */
const SCAN_LIMIT_BYTES = 16 * 1024 * 1024;
const ARCHIVE_MARKERS = ['candidates', 'rounds', 'manifest.json', 'COMPLETE.json'];

/** Adds every 64-hex-digit string in `text` to `into` (a cas:// URI, a bare sha256, a source hash). */
export function addHashesFrom(text: string, into: Set<string>): void {
  for (const m of text.matchAll(HEX64)) into.add(m[0]);
}

async function statOrNull(file: string): Promise<import('node:fs').Stats | null> {
  try {
    return await fs.stat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function readdirOrEmpty(dir: string): Promise<import('node:fs').Dirent[]> {
  try {
    return await fs.readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

interface ObjectEntry { sha256: string; file: string; bytes: number; mtimeMs: number }

export function objectPath(root: string, sha256: string): string {
  return path.join(root, 'objects', sha256.slice(0, 2), sha256.slice(2));
}

async function scanObjects(root: string): Promise<{ objects: Map<string, ObjectEntry>; temps: { file: string; bytes: number; mtimeMs: number }[] }> {
  const objects = new Map<string, ObjectEntry>();
  const temps: { file: string; bytes: number; mtimeMs: number }[] = [];
  for (const d of await readdirOrEmpty(path.join(root, 'objects'))) {
    if (!d.isDirectory() || !/^[0-9a-f]{2}$/.test(d.name)) continue;
    for (const f of await readdirOrEmpty(path.join(root, 'objects', d.name))) {
      const file = path.join(root, 'objects', d.name, f.name);
      const st = await statOrNull(file);
      if (!st || !st.isFile()) continue;
      if (f.name.endsWith('.tmp')) temps.push({ file, bytes: st.size, mtimeMs: st.mtimeMs });
      else if (/^[0-9a-f]{62}$/.test(f.name)) objects.set(d.name + f.name, { sha256: d.name + f.name, file, bytes: st.size, mtimeMs: st.mtimeMs });
    }
  }
  return { objects, temps };
}

async function walkFiles(dir: string, visit: (file: string, rel: string) => Promise<void>, rel = ''): Promise<void> {
  for (const e of await readdirOrEmpty(dir)) {
    const p = path.join(dir, e.name);
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) await walkFiles(p, visit, r);
    else await visit(p, r);
  }
}

interface NameEntry { name: string; file: string; target: string | null; bytes: number; mtimeMs: number }

async function scanNames(root: string): Promise<NameEntry[]> {
  const out: NameEntry[] = [];
  await walkFiles(path.join(root, 'names'), async (file, rel) => {
    if (!rel.endsWith('.json')) return;
    const st = await statOrNull(file);
    if (!st) return;
    let target: string | null = null;
    try {
      const ref = JSON.parse(await fs.readFile(file, 'utf8')) as { sha256?: unknown };
      if (typeof ref.sha256 === 'string' && /^[0-9a-f]{64}$/.test(ref.sha256)) target = ref.sha256;
    } catch {
      // An unreadable binding points at nothing: it is garbage once it is older than the grace age.
    }
    out.push({ name: rel.slice(0, -'.json'.length), file, target, bytes: st.size, mtimeMs: st.mtimeMs });
  });
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

interface ArchiveEntry { key: string; dir: string; bytes: number; files: number; newestMs: number }

/** Archive folders: the directories under archives/ that hold an archive's files (candidates/, rounds/, ...). */
async function scanArchives(root: string): Promise<ArchiveEntry[]> {
  const out: ArchiveEntry[] = [];
  const visit = async (dir: string, key: string): Promise<void> => {
    const entries = await readdirOrEmpty(dir);
    if (key && entries.some((e) => ARCHIVE_MARKERS.includes(e.name))) {
      let bytes = 0;
      let files = 0;
      let newestMs = (await statOrNull(dir))?.mtimeMs ?? 0;
      await walkFiles(dir, async (file) => {
        const st = await statOrNull(file);
        if (!st) return;
        bytes += st.size;
        files += 1;
        newestMs = Math.max(newestMs, st.mtimeMs);
      });
      out.push({ key, dir, bytes, files, newestMs });
      return;
    }
    for (const e of entries) if (e.isDirectory()) await visit(path.join(dir, e.name), key ? `${key}/${e.name}` : e.name);
  };
  await visit(path.join(root, 'archives'), '');
  return out.sort((a, b) => a.key.localeCompare(b.key));
}

async function objectKind(file: string): Promise<string> {
  let fh: import('node:fs/promises').FileHandle | undefined;
  try {
    fh = await fs.open(file, 'r');
    const buf = Buffer.alloc(16);
    const { bytesRead } = await fh.read(buf, 0, 16, 0);
    const head = buf.subarray(0, bytesRead).toString('latin1');
    if (head.startsWith('WHALE-CKPT')) return 'checkpoint';
    if (/^\s*[[{]/.test(head)) return 'json';
    return /^[\x09\x0a\x0d\x20-\x7e]*$/.test(head) ? 'text' : 'binary';
  } catch {
    return 'unknown';
  } finally {
    await fh?.close();
  }
}

/** The hashes a stored JSON object mentions (nothing for checkpoints, text and large files). */
async function mentionedHashes(o: ObjectEntry): Promise<Set<string>> {
  const out = new Set<string>();
  if (o.bytes > SCAN_LIMIT_BYTES) return out;
  const buf = await fs.readFile(o.file).catch(() => null);
  if (!buf) return out;
  const first = buf.subarray(0, 64).toString('utf8').trimStart()[0];
  if (first !== '{' && first !== '[') return out;
  addHashesFrom(buf.toString('utf8'), out);
  return out;
}

/** Works out what retention would remove, without removing anything. */
export async function planGc(root: string, live: LiveReferences, opts: GcOptions): Promise<GcPlan> {
  const now = opts.nowMs ?? Date.now();
  const young = (mtimeMs: number) => mtimeMs >= now - opts.graceMs || (live.protectSinceMs !== null && mtimeMs >= live.protectSinceMs);
  const { objects, temps } = await scanObjects(root);
  const names = await scanNames(root);
  const archives = await scanArchives(root);

  const keep = new Set<string>();
  const mentions = new Map<string, Set<string>>();
  const mentionsOf = async (sha: string): Promise<Set<string>> => {
    let m = mentions.get(sha);
    if (!m) {
      const o = objects.get(sha);
      m = o ? await mentionedHashes(o) : new Set<string>();
      mentions.set(sha, m);
    }
    return m;
  };
  const markReachable = async (seeds: Iterable<string>): Promise<void> => {
    const queue = [...seeds].filter((s) => objects.has(s) && !keep.has(s));
    for (const s of queue) keep.add(s);
    while (queue.length) {
      for (const h of await mentionsOf(queue.pop()!)) {
        if (objects.has(h) && !keep.has(h)) {
          keep.add(h);
          queue.push(h);
        }
      }
    }
  };
  await markReachable(live.hashes);
  await markReachable([...objects.values()].filter((o) => young(o.mtimeMs)).map((o) => o.sha256));

  // Bindings: kept while their target or something it mentions is kept; this can keep more, so repeat.
  const keptNames = new Set<string>();
  for (let changed = true; changed;) {
    changed = false;
    for (const n of names) {
      if (keptNames.has(n.name)) continue;
      const targetLive = n.target !== null && (keep.has(n.target) || [...await mentionsOf(n.target)].some((h) => keep.has(h)));
      if (n.name.startsWith('pins/') || young(n.mtimeMs) || targetLive) {
        keptNames.add(n.name);
        if (n.target) await markReachable([n.target]);
        changed = true;
      }
    }
  }

  const removeObjects: GcObject[] = [];
  let keptBytes = 0;
  for (const o of [...objects.values()].sort((a, b) => a.sha256.localeCompare(b.sha256))) {
    if (keep.has(o.sha256)) keptBytes += o.bytes;
    else removeObjects.push({ sha256: o.sha256, bytes: o.bytes, kind: await objectKind(o.file), ageMs: now - o.mtimeMs });
  }
  const removeNames = names.filter((n) => !keptNames.has(n.name)).map((n) => ({ name: n.name, target: n.target ?? '(unreadable)', bytes: n.bytes }));
  const removeArchives = archives.filter((a) => !live.archiveKeys.has(a.key) && !young(a.newestMs)).map((a) => ({ key: a.key, bytes: a.bytes, files: a.files }));
  const removeTemps = temps.filter((t) => !young(t.mtimeMs)).map((t) => ({ file: path.relative(root, t.file), bytes: t.bytes }));
  // A step folder stays while a kept pointer names a path in it (never a live run's weights) or while it is young.
  const pointedAt = new Set<string>();
  for (const sha of keep) {
    const o = objects.get(sha) as ObjectEntry;
    for (const p of await pointerPaths(o.file, o.bytes)) {
      const key = stepFolderOf(root, p);
      if (key !== null) pointedAt.add(key);
    }
  }
  const stepFolders = await scanStepFolders(root);
  const removeSteps = stepFolders.filter((f) => !pointedAt.has(f.key) && !young(f.newestMs)).map((f) => ({ key: f.key, bytes: f.bytes, files: f.files }));
  const bytes = [...removeObjects, ...removeNames, ...removeArchives, ...removeTemps, ...removeSteps].reduce((a, x) => a + x.bytes, 0);
  return {
    root, cutoffMs: now - opts.graceMs, objects: removeObjects, names: removeNames, archives: removeArchives, tempFiles: removeTemps, stepFolders: removeSteps, bytes,
    kept: { objects: keep.size, bytes: keptBytes, names: keptNames.size, archives: archives.length - removeArchives.length, stepFolders: stepFolders.length - removeSteps.length },
  };
}

export interface GcResult { removed: { objects: number; names: number; archives: number; tempFiles: number; stepFolders: number }; bytes: number; skipped: string[] }

/**
 * Removes what a plan lists. Bindings go first (a binding must never point at a removed object), then
 * objects, archives and temp files. Each file is re-checked just before removal: one modified since the
 * grace cut-off (re-stored, touched) is skipped and reported.
 */
export async function applyGc(plan: GcPlan): Promise<GcResult> {
  const cutoff = plan.cutoffMs;
  const root = plan.root;
  const skipped: string[] = [];
  const removed = { objects: 0, names: 0, archives: 0, tempFiles: 0, stepFolders: 0 };
  let bytes = 0;
  const removeFile = async (file: string, label: string, size: number): Promise<boolean> => {
    const st = await statOrNull(file);
    if (!st) return false;
    if (st.mtimeMs >= cutoff) {
      skipped.push(`${label} (modified since the plan was made)`);
      return false;
    }
    await fs.rm(file, { force: true });
    bytes += size;
    return true;
  };
  for (const n of plan.names) if (await removeFile(path.join(root, 'names', n.name + '.json'), `name ${n.name}`, n.bytes)) removed.names += 1;
  for (const o of plan.objects) if (await removeFile(objectPath(root, o.sha256), `object ${o.sha256}`, o.bytes)) removed.objects += 1;
  for (const t of plan.tempFiles) if (await removeFile(path.join(root, t.file), `temp file ${t.file}`, t.bytes)) removed.tempFiles += 1;
  for (const a of plan.archives) {
    const dir = path.join(root, 'archives', ...a.key.split('/'));
    const now = (await scanArchives(root)).find((x) => x.key === a.key);
    if (!now) continue;
    if (now.newestMs >= cutoff) {
      skipped.push(`archive ${a.key} (modified since the plan was made)`);
      continue;
    }
    await fs.rm(dir, { recursive: true, force: true });
    removed.archives += 1;
    bytes += a.bytes;
    await removeEmptyParents(path.dirname(dir), path.join(root, 'archives'));
  }
  for (const n of plan.names) await removeEmptyParents(path.dirname(path.join(root, 'names', n.name)), path.join(root, 'names'));
  for (const f of plan.stepFolders ?? []) {
    const dir = path.join(root, STEP_FOLDERS, f.key);
    const now = await folderStats(dir);
    if (!now) continue;
    if (now.newestMs >= cutoff) {
      skipped.push(`step folder ${STEP_FOLDERS}/${f.key} (modified since the plan was made)`);
      continue;
    }
    await fs.rm(dir, { recursive: true, force: true });
    removed.stepFolders += 1;
    bytes += f.bytes;
  }
  return { removed, bytes, skipped };
}

async function removeEmptyParents(dir: string, stopAt: string): Promise<void> {
  while (dir.startsWith(stopAt + path.sep)) {
    if ((await readdirOrEmpty(dir)).length > 0) return;
    await fs.rmdir(dir).catch(() => undefined);
    dir = path.dirname(dir);
  }
}

/** `stepFolders`: external-trainer step folders the run's checkpoint pointers name (its served weights). */
export interface DiskUse { objects: number; bytes: number; archives: number; archiveBytes: number; stepFolders: number; stepFolderBytes: number }

/** Bytes in the store that one run's references point at (objects it mentions, and its archive folders). */
export async function diskUse(root: string, refs: { hashes: Set<string>; archiveKeys: Set<string> }): Promise<DiskUse> {
  const use: DiskUse = { objects: 0, bytes: 0, archives: 0, archiveBytes: 0, stepFolders: 0, stepFolderBytes: 0 };
  const seen = new Set<string>();
  const steps = new Set<string>();
  const queue = [...refs.hashes];
  while (queue.length) {
    const sha = queue.pop()!;
    if (seen.has(sha)) continue;
    seen.add(sha);
    const file = objectPath(root, sha);
    const st = await statOrNull(file);
    if (!st) continue;
    use.objects += 1;
    use.bytes += st.size;
    for (const p of await pointerPaths(file, st.size)) {
      const key = stepFolderOf(root, p);
      if (key !== null) steps.add(key);
    }
    for (const h of await mentionedHashes({ sha256: sha, file, bytes: st.size, mtimeMs: st.mtimeMs })) queue.push(h);
  }
  for (const a of await scanArchives(root)) {
    if (!refs.archiveKeys.has(a.key)) continue;
    use.archives += 1;
    use.archiveBytes += a.bytes;
  }
  for (const key of steps) {
    const st = await folderStats(path.join(root, STEP_FOLDERS, key));
    if (!st) continue;
    use.stepFolders += 1;
    use.stepFolderBytes += st.bytes;
  }
  return use;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}
