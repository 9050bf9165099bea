// The worker's handle on one sandbox child process: starts it (node + tsx), sends one request at a time,
// watches its resident memory (Linux /proc) and kills it over the cap, and restarts it on the next
// request after it died. A death during a request answers that request with a typed failure.

import { AgentSystemError } from '../agent/errors';
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { HarnessFailure } from '../agent/harness-runner';
import type { ChildMessage, ParentMessage } from './protocol';

export interface SandboxProcessOptions {
  /** Resident-memory cap of the child in MiB; over it the child is killed (memory-limit). */
  rssCapMb: number;
  /** Isolates the child keeps loaded (one per harness). */
  maxIsolates: number;
  /** How often the resident memory is sampled, in ms. */
  rssPollMs: number;
  /** V8 old-space limit of the child's own heap (results, IPC), MiB; isolates have their own limits. */
  childHeapMb: number;
}

export type RequestOutcome = { ok: true; reply: ChildMessage } | { ok: false; failure: HarnessFailure };

type Distribute<T> = T extends unknown ? Omit<T, 'id'> : never;
export type SandboxRequest = Distribute<ParentMessage>;

const CHILD_ENTRY = path.join(__dirname, 'child-main.ts');
// tsx's loader by absolute URL, so the child starts whatever the worker's working directory is.
const TSX_LOADER = pathToFileURL(require.resolve('tsx')).href;
const PAGE_BYTES = 4096;

export class SandboxProcess {
  private child: ChildProcess | null = null;
  private starting: Promise<ChildProcess> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private inFlight: { id: number; settle: (o: RequestOutcome) => void } | null = null;
  private killedForRss = false;
  private rssTimer: NodeJS.Timeout | null = null;
  /** Times a child died unexpectedly (killed, crashed, out of memory). */
  restarts = 0;
  peakRssMb = 0;

  constructor(private readonly options: SandboxProcessOptions) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Sends one request once the previous ones finished; resolves with the reply or a typed failure. */
  request(msg: SandboxRequest, deadlineMs: number): Promise<RequestOutcome> {
    const run = () => this.send(msg, deadlineMs);
    const p = this.queue.then(run, run);
    this.queue = p;
    return p;
  }

  private async send(msg: SandboxRequest, deadlineMs: number): Promise<RequestOutcome> {
    const child = await this.ensureStarted();
    const id = this.nextId++;
    return new Promise<RequestOutcome>((resolve) => {
      const timer = setTimeout(() => this.killChild(child, `no reply within ${deadlineMs} ms`), deadlineMs);
      const settle = (o: RequestOutcome) => {
        clearTimeout(timer);
        if (this.inFlight?.id === id) this.inFlight = null;
        resolve(o);
      };
      this.inFlight = { id, settle };
      try {
        child.send({ ...msg, id } as ParentMessage);
      } catch (e) {
        // The channel closed between start and send (the child just died): answer, do not hang.
        settle({ ok: false, failure: { kind: 'runtime-error', reason: `could not reach the sandbox process: ${e instanceof Error ? e.message : String(e)}` } });
      }
    });
  }

  private ensureStarted(): Promise<ChildProcess> {
    if (this.child) return Promise.resolve(this.child);
    if (!this.starting) this.starting = this.start().finally(() => (this.starting = null));
    return this.starting;
  }

  private start(): Promise<ChildProcess> {
    return new Promise((resolve, reject) => {
      const child = fork(CHILD_ENTRY, [String(this.options.maxIsolates)], {
        execArgv: ['--import', TSX_LOADER, `--max-old-space-size=${this.options.childHeapMb}`],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        serialization: 'json',
      });
      this.killedForRss = false;
      let ready = false;
      child.on('message', (m: ChildMessage) => {
        if (m.type === 'ready') {
          ready = true;
          this.child = child;
          this.watchRss(child);
          resolve(child);
        } else if (this.inFlight && m.id === this.inFlight.id) this.inFlight.settle({ ok: true, reply: m });
      });
      child.on('exit', (code, signal) => {
        if (this.rssTimer) clearInterval(this.rssTimer);
        this.rssTimer = null;
        if (this.child === child) this.child = null;
        if (!this.closing) this.restarts++;
        if (!ready) reject(new AgentSystemError(`sandbox process failed to start (code ${code}, signal ${signal})`));
        this.inFlight?.settle({ ok: false, failure: this.deathFailure(code, signal) });
        // Start the replacement now, so the next request finds it ready; a failed start is retried by
        // that request (ensureStarted) and reported there.
        if (ready && !this.closing) this.ensureStarted().catch(() => undefined);
      });
      child.on('error', (e) => {
        if (!ready) reject(e);
      });
    });
  }

  private deathFailure(code: number | null, signal: NodeJS.Signals | null): HarnessFailure {
    if (this.killedForRss) return { kind: 'memory-limit', reason: `the sandbox process exceeded its resident-memory cap of ${this.options.rssCapMb} MiB and was killed` };
    if (this.killReason) return { kind: 'timeout', reason: `the sandbox process was killed: ${this.killReason}` };
    // V8 aborts the process when an isolate runs out of memory in a way isolated-vm cannot recover from
    // (isolate-harness.ts installs no catastrophic-error handler on purpose).
    if (signal === 'SIGABRT' || code === 134) return { kind: 'memory-limit', reason: 'the sandbox process aborted (V8 out of memory)' };
    return { kind: 'runtime-error', reason: `the sandbox process died (code ${code}, signal ${signal})` };
  }

  private killReason: string | null = null;
  private closing = false;

  /** Kills `child` if it is still the current one (a late timer must never kill its successor). */
  private killChild(child: ChildProcess, reason: string): void {
    if (this.child !== child) return;
    this.killReason = reason;
    child.kill('SIGKILL');
  }

  private watchRss(child: ChildProcess): void {
    this.killReason = null;
    const pid = child.pid;
    if (pid === undefined) return;
    this.rssTimer = setInterval(() => {
      let rssMb: number;
      try {
        rssMb = (Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE_BYTES) / 2 ** 20;
      } catch {
        return; // the process is gone; 'exit' handles it
      }
      this.peakRssMb = Math.max(this.peakRssMb, rssMb);
      if (rssMb > this.options.rssCapMb) {
        this.killedForRss = true;
        child.kill('SIGKILL');
      }
    }, this.options.rssPollMs);
    this.rssTimer.unref();
  }

  /** Starts the child now rather than on the first request (a worker calls this at boot). */
  async warmUp(): Promise<void> {
    await this.ensureStarted();
  }

  /** Stops the child (pending requests get a runtime-error failure). */
  async close(): Promise<void> {
    this.closing = true;
    if (this.starting) await this.starting.catch(() => undefined); // a replacement being started
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.disconnect();
    await exited;
  }
}
