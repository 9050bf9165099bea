// Content-addressed artifact store: the interface, and a directory implementation that is safe on a shared
// network filesystem (temp file in the same directory + fsync + rename; readers verify the hash).
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ArtifactKind, ArtifactRef, uriForSha256 } from './artifact-ref';
import { WhaleError } from '../common/errors';

/** A stored object does not hash to its name: the machine's fault; restoring the object lets a retry succeed. */
export class ArtifactIntegrityError extends WhaleError {
  override name = 'ArtifactIntegrityError';
  readonly fault = 'system';
}
/** The store lacks an object a run refers to: garbage-collected, or this worker reads another store directory. */
export class ArtifactNotFoundError extends WhaleError {
  override name = 'ArtifactNotFoundError';
  readonly fault = 'system';
}

export interface ArtifactStore {
  /** Stores bytes (idempotent: equal bytes give an equal reference). */
  put(kind: ArtifactKind, data: Uint8Array | string): Promise<ArtifactRef>;
  /** Reads and verifies bytes; throws ArtifactIntegrityError when they do not match the hash. */
  get(ref: ArtifactRef): Promise<Buffer>;
  has(ref: ArtifactRef): Promise<boolean>;
  /** Binds a name (an idempotency key) to a reference; the first binding wins and is returned. */
  bindName(name: string, ref: ArtifactRef): Promise<ArtifactRef>;
  /** The reference bound to a name, or undefined. */
  lookupName(name: string): Promise<ArtifactRef | undefined>;
  /** Lists every stored object's sha256 (for retention). */
  listObjects(): Promise<string[]>;
}

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

const NAME_RE = /^[A-Za-z0-9._-][A-Za-z0-9._/-]{0,400}$/;

export class DirectoryArtifactStore implements ArtifactStore {
  constructor(readonly root: string) {}

  private objectPath(sha256: string): string {
    return path.join(this.root, 'objects', sha256.slice(0, 2), sha256.slice(2));
  }

  private namePath(name: string): string {
    if (!NAME_RE.test(name) || name.split('/').includes('..')) {
      throw new Error(`invalid artifact name ${JSON.stringify(name)}: use letters, digits, '.', '_', '-' and '/' segments`);
    }
    return path.join(this.root, 'names', name + '.json');
  }

  async put(kind: ArtifactKind, data: Uint8Array | string): Promise<ArtifactRef> {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const sha256 = sha256Hex(buf);
    const ref: ArtifactRef = { kind, uri: uriForSha256(sha256), sha256, bytes: buf.byteLength };
    const target = this.objectPath(sha256);
    if (await this.verifyExisting(target, sha256)) {
      // Stored again: refresh its modification time, so `whale gc` (which spares recent files) cannot remove
      // an old object that a new run has just started to use.
      const now = new Date();
      await fs.utimes(target, now, now).catch(() => undefined);
      return ref;
    }
    await writeFileAtomic(target, buf);
    return ref;
  }

  /** An existing object is trusted only if its bytes hash right; a corrupt one is replaced. */
  private async verifyExisting(target: string, sha256: string): Promise<boolean> {
    try {
      const existing = await fs.readFile(target);
      return sha256Hex(existing) === sha256;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  async get(ref: ArtifactRef): Promise<Buffer> {
    const parsed = ArtifactRef.safeParse(ref);
    if (!parsed.success) throw new Error(`not an artifact reference: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
    let buf: Buffer;
    try {
      buf = await fs.readFile(this.objectPath(ref.sha256));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new ArtifactNotFoundError(`artifact ${ref.uri} (${ref.kind}) is not in the store at ${this.root}: was it garbage-collected, or is this worker pointed at another store directory?`);
      }
      throw err;
    }
    const actual = sha256Hex(buf);
    if (actual !== ref.sha256 || buf.byteLength !== ref.bytes) {
      throw new ArtifactIntegrityError(
        `artifact ${ref.uri} (${ref.kind}) is corrupt: expected ${ref.bytes} bytes with sha256 ${ref.sha256}, found ${buf.byteLength} bytes with sha256 ${actual}. Delete ${this.objectPath(ref.sha256)} and re-run the step that produced it.`,
      );
    }
    return buf;
  }

  async has(ref: ArtifactRef): Promise<boolean> {
    return this.verifyExisting(this.objectPath(ref.sha256), ref.sha256);
  }

  async bindName(name: string, ref: ArtifactRef): Promise<ArtifactRef> {
    const target = this.namePath(name);
    const tmp = `${target}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.writeFile(tmp, JSON.stringify(ref));
    } catch (err) {
      throw notWritable(err, target);
    }
    try {
      // link() fails with EEXIST when the name is taken: first write wins, atomically, on NFS too.
      await fs.link(tmp, target);
      return ref;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const existing = await this.lookupName(name);
      if (!existing) throw new Error(`artifact name ${name} exists but is unreadable`);
      return existing;
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }

  async lookupName(name: string): Promise<ArtifactRef | undefined> {
    let text: string;
    try {
      text = await fs.readFile(this.namePath(name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const parsed = ArtifactRef.safeParse(JSON.parse(text));
    if (!parsed.success) throw new ArtifactIntegrityError(`artifact name ${name} holds an invalid reference: ${parsed.error.message}`);
    return parsed.data;
  }

  async listObjects(): Promise<string[]> {
    const out: string[] = [];
    const base = path.join(this.root, 'objects');
    let dirs: string[];
    try {
      dirs = await fs.readdir(base);
    } catch {
      return out;
    }
    for (const d of dirs) {
      for (const f of await fs.readdir(path.join(base, d))) if (!f.endsWith('.tmp')) out.push(d + f);
    }
    return out.sort();
  }
}

/** Writes a file so that no reader ever sees it half-written: temp file in the same dir, fsync, rename. */
export async function writeFileAtomic(target: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${target}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  let fh: fs.FileHandle;
  try {
    await fs.mkdir(path.dirname(target), { recursive: true });
    fh = await fs.open(tmp, 'w');
  } catch (err) {
    throw notWritable(err, target);
  }
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await fs.rename(tmp, target);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

/** A read-only or foreign-owned directory is an operator's fix, said plainly (the activity retries until it is fixed). */
function notWritable(err: unknown, target: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') return err as Error;
  return new Error(
    `cannot write ${target}: its directory is read-only (${code}). Nothing was written. Make ${path.dirname(target)} writable by this worker (or point WHALE_ARTIFACT_DIR at a writable directory); the activity is retried and goes on once it is.`,
  );
}
