// Request/response plumbing for the runtime's worker threads (trainer and sampler). onnxruntime-node's
// "async" run executes synchronously on the calling thread, so ORT work lives in workers to keep the
// main event loop (heartbeats, sandbox IPC) responsive.
import * as path from 'node:path';
import { MessagePort, parentPort, Worker } from 'node:worker_threads';

export type WireResponse = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };
type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

/**
 * Starts a worker from a module given as an absolute path without extension (callers pass
 * `path.join(__dirname, 'core-worker')`). From TypeScript sources (tsx) a worker does not inherit the
 * parent's loader hooks, so a one-line CommonJS bootstrap registers tsx first.
 */
function startWorker(modulePath: string, workerData: unknown): Worker {
  if (!path.isAbsolute(modulePath)) throw new Error(`worker module path ${modulePath} must be absolute: pass path.join(__dirname, name)`);
  const ts = __filename.endsWith('.ts');
  const entry = `${modulePath}${ts ? '.ts' : '.js'}`;
  if (!ts) return new Worker(entry, { workerData });
  // Resolved here so the bootstrap does not depend on the process's working directory.
  const tsx = require.resolve('tsx/cjs');
  return new Worker(`require(${JSON.stringify(tsx)}); require(${JSON.stringify(entry)});`, { eval: true, workerData });
}

export class WorkerClient<Req extends { op: string }> {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: Error | undefined;

  constructor(
    modulePath: string,
    workerData: unknown,
    private readonly what: string,
  ) {
    this.worker = startWorker(modulePath, workerData);
    // The worker keeps the process alive only while a request is in flight (a forgotten close() must
    // not hang process exit).
    this.worker.unref();
    this.worker.on('message', (res: WireResponse) => {
      const p = this.pending.get(res.id);
      if (!p) return;
      this.pending.delete(res.id);
      if (this.pending.size === 0) this.worker.unref();
      if (res.ok) p.resolve(res.value);
      else p.reject(new Error(res.message));
    });
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => this.fail(new Error(`${what} worker exited (code ${code})`)));
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  request<T>(req: Req, transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.ref();
      this.worker.postMessage({ ...req, id }, transfer);
    });
  }

  async close(closeRequest: Req): Promise<void> {
    if (!this.failure) await this.request(closeRequest);
    this.failure ??= new Error(`${this.what} is closed`);
    await this.worker.terminate();
  }
}

/** Worker side: answers requests one at a time, in arrival order; `handle` returns [value, transfer list]. */
export function serveRequests<Req extends { op: string }>(handle: (req: Req) => Promise<[unknown, ArrayBuffer[]]>): void {
  const port: MessagePort | null = parentPort;
  if (!port) throw new Error('this module must run as a worker thread');
  let chain: Promise<unknown> = Promise.resolve();
  port.on('message', (msg: Req & { id: number }) => {
    chain = chain.then(async () => {
      try {
        const [value, transfer] = await handle(msg);
        port.postMessage({ id: msg.id, ok: true, value }, transfer);
      } catch (err) {
        port.postMessage({ id: msg.id, ok: false, message: err instanceof Error ? err.message : String(err) });
      }
    });
  });
}
