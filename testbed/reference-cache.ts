// The soak's cache of uninterrupted reference outcomes: one JSON file per run config and source tree, written
// atomically, with a lock beside it so that soaks started side by side (the suite runs the reduced soak and
// the server-loss test at the same time) run the reference once while the others wait for its file.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

const lockOf = (file: string) => `${file}.lock`;

/** Whether the process that wrote a lock still runs (a lock too old to be a live run counts as stale). */
function lockLive(lock: string, maxAgeMs: number): boolean {
  let text: string;
  try {
    if (Date.now() - statSync(lock).mtimeMs > maxAgeMs) return false;
    text = readFileSync(lock, 'utf8');
  } catch {
    return false; // released meanwhile
  }
  const pid = Number(text);
  if (!text || !Number.isInteger(pid) || pid <= 0) return true; // just created, the pid not written yet
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The cached outcome for `file`, or null once this process holds the lock: it must then run the reference,
 * `storeReference` it if it completed, and `releaseReference` in any case. While another live process holds
 * the lock, polls for the file (until `timeoutMs`); a lock whose process is gone is taken over.
 */
export async function cachedReferenceOrLock<T>(file: string, timeoutMs: number, log: (line: string) => void): Promise<T | null> {
  mkdirSync(path.dirname(file), { recursive: true });
  const lock = lockOf(file);
  const deadline = Date.now() + timeoutMs;
  let said = false;
  while (Date.now() < deadline) {
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as T;
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      return null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (!lockLive(lock, timeoutMs)) {
      rmSync(lock, { force: true });
      continue;
    }
    if (!said) log(`reference: another soak is running it (lock ${lock}); waiting for ${file}`);
    said = true;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for the reference another soak runs (${file}; remove ${lock} if no soak runs)`);
}

/** Writes the outcome atomically (a reader never sees half a file). */
export function storeReference(file: string, outcome: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(outcome, null, 2));
  renameSync(tmp, file);
}

/** Gives up the lock taken by `cachedReferenceOrLock` (waiting soaks then read the file, or run it themselves). */
export function releaseReference(file: string): void {
  const lock = lockOf(file);
  try {
    if (readFileSync(lock, 'utf8') === String(process.pid)) rmSync(lock, { force: true });
  } catch {
    // not held (any more)
  }
}
