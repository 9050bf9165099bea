// Which checkpoints `whale serve` answers for, by model name, and the batching in front of each sampler.
// The checkpoint given on the command line is served under its name (and as `ckpt-<sha256>`); with an
// artifact store, any checkpoint in it is loaded on first use as `ckpt-<sha256>`, so one server follows a
// run from checkpoint to checkpoint without a restart. Loaded samplers are kept in a small LRU.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { decodeCheckpoint, OrtSampler, type Checkpoint, type GenerateRequest, type GenerateResult } from '../model';
import { clip } from './http-guards';
import { ApiError } from './openai-schema';
import { WhaleError } from '../common/errors';

/** The model name of a checkpoint in an artifact store (the OpenAI backend's default name template). */
export function checkpointModelName(sha256: string): string {
  return `ckpt-${sha256}`;
}

export interface ServedModel {
  id: string;
  sha256: string;
  maxContext: number;
  /**
   * Generates through the model's batcher (requests arriving together decode together). When `signal` aborts,
   * queued rows are dropped (the promise rejects) and running rows stop at the next step (`cancelled`).
   */
  generate(requests: GenerateRequest[], signal?: AbortSignal): Promise<GenerateResult[]>;
}

export interface ModelRegistryOptions {
  /** The command line's checkpoint file and the name it is served under. */
  checkpointFile: string;
  name: string;
  /** An artifact store directory: `ckpt-<sha256>` names load checkpoints from it. */
  storeDir?: string;
  threads: number;
  maxBatchRows: number;
  /** Samplers kept loaded at once (each holds its weights). */
  maxLoaded: number;
}

/** The rejection of a request whose signal aborted while it waited in the queue (none of its rows ran). */
export class WithdrawnError extends WhaleError {
  override readonly name = 'WithdrawnError';
  // Nobody's fault: the client went away; the same request sent again would run.
  readonly fault = 'system';
  constructor() {
    super('the request was withdrawn before it was generated');
  }
}

interface Queued {
  reqs: GenerateRequest[];
  signal?: AbortSignal;
  resolve: (r: GenerateResult[]) => void;
  reject: (e: Error) => void;
}

/** Collects requests that arrive while the sampler is busy and runs them as one batch when it is free. */
class Batcher {
  private queue: Queued[] = [];
  private busy = false;
  private idle: Array<() => void> = [];
  constructor(private readonly sampler: OrtSampler, private readonly maxRows: number) {}

  generate(reqs: GenerateRequest[], signal?: AbortSignal): Promise<GenerateResult[]> {
    return new Promise((resolve, reject) => {
      const entry: Queued = { reqs, signal, resolve, reject };
      if (signal?.aborted) return reject(new WithdrawnError());
      this.queue.push(entry);
      // A withdrawn request still waiting leaves the queue at once (no rows decoded for nobody).
      signal?.addEventListener('abort', () => {
        const at = this.queue.indexOf(entry);
        if (at < 0) return;
        this.queue.splice(at, 1);
        reject(new WithdrawnError());
        if (!this.busy) void this.drain();
      }, { once: true });
      // Let requests that arrive in the same tick join the batch.
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    if (this.queue.length === 0) {
      for (const wake of this.idle.splice(0)) wake();
      return;
    }
    this.busy = true;
    const batch: typeof this.queue = [];
    let rows = 0;
    while (this.queue.length > 0 && (batch.length === 0 || rows + this.queue[0].reqs.length <= this.maxRows)) {
      const next = this.queue.shift() as (typeof this.queue)[number];
      batch.push(next);
      rows += next.reqs.length;
    }
    try {
      const results = await this.sampler.generate(batch.flatMap((b) => b.reqs), batch.flatMap((b) => b.reqs.map(() => b.signal)));
      let at = 0;
      for (const b of batch) {
        b.resolve(results.slice(at, at + b.reqs.length));
        at += b.reqs.length;
      }
    } catch (err) {
      for (const b of batch) b.reject(err as Error);
    } finally {
      this.busy = false;
      void this.drain();
    }
  }

  /** Closes the sampler once every queued request is answered. */
  async close(): Promise<void> {
    if (this.busy || this.queue.length > 0) await new Promise<void>((r) => this.idle.push(r));
    await this.sampler.close();
  }
}

export class ModelRegistry {
  private readonly loaded = new Map<string, Promise<{ model: ServedModel; batcher: Batcher }>>();
  private defaultSha = '';

  constructor(private readonly opts: ModelRegistryOptions) {}

  /** Loads the command line's checkpoint (fails fast on a bad file). */
  async start(): Promise<ServedModel> {
    let bytes: Buffer;
    try {
      bytes = await fs.readFile(this.opts.checkpointFile);
    } catch (err) {
      throw new Error(`cannot read checkpoint ${this.opts.checkpointFile}: ${(err as Error).message}`);
    }
    const ck = decodeCheckpoint(bytes, `checkpoint ${this.opts.checkpointFile}`);
    this.defaultSha = createHash('sha256').update(bytes).digest('hex');
    return this.load(this.defaultSha, async () => ck);
  }

  /** Names a client may use: the default name and the default checkpoint's `ckpt-<sha256>`, plus loaded ones. */
  listed(): string[] {
    const names = new Set([this.opts.name, checkpointModelName(this.defaultSha)]);
    for (const sha of this.loaded.keys()) names.add(checkpointModelName(sha));
    return [...names];
  }

  get defaultName(): string {
    return this.opts.name;
  }

  async resolve(name: string): Promise<ServedModel> {
    if (name === this.opts.name) return this.load(this.defaultSha, () => this.readStored(this.defaultSha, true));
    const m = /^ckpt-([0-9a-f]{64})$/.exec(name);
    if (!m) throw new ApiError(404, `The model ${clip(name)} does not exist. Use \`${this.opts.name}\` or ckpt-<sha256> of a checkpoint${this.opts.storeDir ? ` in ${this.opts.storeDir}` : ' (start the server with --store to load them)'}.`, 'not_found_error', 'model', 'model_not_found');
    return this.load(m[1], () => this.readStored(m[1], false));
  }

  private async readStored(sha: string, isDefault: boolean): Promise<Checkpoint> {
    if (isDefault || sha === this.defaultSha) return decodeCheckpoint(await fs.readFile(this.opts.checkpointFile));
    if (!this.opts.storeDir) throw new ApiError(404, `The model \`ckpt-${sha}\` is not loaded and this server has no artifact store: start it with --store <dir>.`, 'not_found_error', 'model', 'model_not_found');
    const file = path.join(this.opts.storeDir, 'objects', sha.slice(0, 2), sha.slice(2));
    let bytes: Buffer;
    try {
      bytes = await fs.readFile(file);
    } catch {
      throw new ApiError(404, `The model \`ckpt-${sha}\` does not exist: no checkpoint with that sha256 in ${this.opts.storeDir}.`, 'not_found_error', 'model', 'model_not_found');
    }
    if (createHash('sha256').update(bytes).digest('hex') !== sha) throw new ApiError(500, `checkpoint ${sha} in the store is corrupt (its bytes hash differently)`, 'server_error');
    try {
      return decodeCheckpoint(bytes, `checkpoint ${sha}`);
    } catch (err) {
      throw new ApiError(400, `ckpt-${sha} is not a WHALE checkpoint: ${(err as Error).message}`, 'invalid_request_error', 'model', 'model_not_found');
    }
  }

  private async load(sha: string, read: () => Promise<Checkpoint>): Promise<ServedModel> {
    let entry = this.loaded.get(sha);
    if (entry) {
      // Most recently used last.
      this.loaded.delete(sha);
      this.loaded.set(sha, entry);
    } else {
      entry = (async () => {
        const ck = await read();
        const sampler = await OrtSampler.fromCheckpoint(ck, { threads: this.opts.threads, maxBatchRows: this.opts.maxBatchRows });
        const batcher = new Batcher(sampler, this.opts.maxBatchRows);
        const model: ServedModel = { id: checkpointModelName(sha), sha256: sha, maxContext: sampler.maxContext, generate: (r, signal) => batcher.generate(r, signal) };
        return { model, batcher };
      })();
      this.loaded.set(sha, entry);
      entry.catch(() => this.loaded.delete(sha));
      this.evict();
    }
    return (await entry).model;
  }

  private evict(): void {
    while (this.loaded.size > this.opts.maxLoaded) {
      const [oldest, entry] = this.loaded.entries().next().value as [string, Promise<{ batcher: Batcher }>];
      this.loaded.delete(oldest);
      // In-flight requests of an evicted model finish first: the sampler answers queued calls before closing.
      void entry.then((e) => e.batcher.close(), () => undefined);
    }
  }

  async close(): Promise<void> {
    const entries = [...this.loaded.values()];
    this.loaded.clear();
    for (const e of entries) await e.then((x) => x.batcher.close(), () => undefined);
  }
}
