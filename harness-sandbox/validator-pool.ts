// The worker's handle on the validator child: every compile and type check of untrusted harness source
// runs there, under a CPU-time, wall-time, heap and resident-memory cap, one request at a time; results are
// cached by the source's sha256, so a harness is compiled once per process. A child that dies or goes over
// a cap is killed and replaced at once; the caller gets a typed failure (compile-error, timeout,
// memory-limit) that says what to change, never a throw. Only a child that cannot start at all throws
// (AgentSystemError: the machine is at fault, a retry is right).

import { fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { AgentSystemError } from '../agent/errors';
import type { HarnessFailure } from '../agent/harness-runner';
import type { CompileOutcome, TypeOutcome, ValidatorReply, ValidatorRequest } from './validator-protocol';
import { limitViolation } from './validator-protocol';

export type { CompileOutcome, TypeOutcome } from './validator-protocol';

export interface ValidatorOptions {
  /** CPU time of the child per request (compile + type check), ms. A healthy harness needs 0.1-1.5 s. */
  cpuMs: number;
  /** Wall time per request once the child is up, ms; a request starved by machine load gets 3x more, once. */
  wallMs: number;
  /** V8 heap of the child (--max-old-space-size), MiB; over it V8 aborts the child (memory-limit). */
  heapMb: number;
  /** Resident memory of the child, MiB; over it the child is killed (memory-limit). */
  rssCapMb: number;
  /** Largest source accepted, bytes (a real harness is 2-20 KB). */
  maxSourceBytes: number;
  /** How often CPU, memory and wall time are sampled during a request, ms. */
  pollMs: number;
  /** Time a child may take to start (load TypeScript, parse the contract and lib), ms. */
  startMs: number;
  /** Sources whose outcome is kept (least recently used goes first). */
  cacheEntries: number;
}

export const DEFAULT_VALIDATOR_OPTIONS: ValidatorOptions = {
  cpuMs: 5_000,
  wallMs: 10_000,
  heapMb: 512,
  rssCapMb: 1_024,
  maxSourceBytes: 256 * 1024,
  pollMs: 50,
  startMs: 30_000,
  cacheEntries: 128,
};

export interface CheckOutcome {
  compile: CompileOutcome;
  /** Null when not asked for, or when the source did not compile (nothing to type-check). */
  types: TypeOutcome | null;
}

const CHILD_ENTRY = path.join(__dirname, 'validator-child.ts');
const TSX_LOADER = pathToFileURL(require.resolve('tsx')).href;
const PAGE_BYTES = 4096;
const TICK_MS = 10; // USER_HZ = 100 on Linux

/** CPU (user + system, all threads) and resident memory of a process, from /proc; null once it is gone. */
function usage(pid: number): { cpuMs: number; rssMb: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const rssMb = (Number(readFileSync(`/proc/${pid}/statm`, 'latin1').split(' ')[1]) * PAGE_BYTES) / 2 ** 20;
    return { cpuMs: (Number(f[11]) + Number(f[12])) * TICK_MS, rssMb };
  } catch {
    return null;
  }
}

const harnessIdOf = (source: string) => createHash('sha256').update(source).digest('hex');

export class ValidatorPool {
  readonly options: ValidatorOptions;
  private child: ChildProcess | null = null;
  private starting: Promise<ChildProcess> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private onReply: ((m: ValidatorReply) => void) | null = null;
  private onExit: ((code: number | null, signal: NodeJS.Signals | null) => void) | null = null;
  private closing = false;
  private readonly cache = new Map<string, CheckOutcome>();
  private readonly pending = new Map<string, Promise<CheckOutcome>>();
  /** Children killed or dead while working (each was replaced). */
  restarts = 0;
  /**
   * Requests that reached the child, the ones answered from the cache, the ones given more wall time because
   * machine load starved them, and re-runs after an unexplained death of the child.
   */
  readonly counts = { requests: 0, cacheHits: 0, extended: 0, retries: 0 };

  constructor(options: Partial<ValidatorOptions> = {}) {
    this.options = { ...DEFAULT_VALIDATOR_OPTIONS, ...options };
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Transpile + static checks only (what loading a harness needs). */
  async compile(source: string): Promise<CompileOutcome> {
    return (await this.check(source, { typecheck: false })).compile;
  }

  /** Compiles and (by default) type-checks `source`, from the cache when this source was seen before. */
  check(source: string, opts: { typecheck?: boolean } = {}): Promise<CheckOutcome> {
    const typecheck = opts.typecheck !== false;
    const harnessId = harnessIdOf(source);
    const cached = this.cache.get(harnessId);
    if (cached && (!typecheck || cached.types !== null || !compiles(cached.compile))) {
      this.counts.cacheHits++;
      this.cache.delete(harnessId); // re-insert: Map order is the LRU order
      this.cache.set(harnessId, cached);
      return Promise.resolve(cached);
    }
    const bytes = Buffer.byteLength(source, 'utf8');
    if (bytes > this.options.maxSourceBytes) {
      const failure: HarnessFailure = { kind: 'compile-error', reason: `the harness source is ${bytes} bytes; the limit is ${this.options.maxSourceBytes}: move data tables out of the harness, keep the code` };
      return Promise.resolve(this.remember(harnessId, { compile: { ok: false, harnessId, failure, violations: [limitViolation(failure)] }, types: null }));
    }
    const key = `${harnessId}:${typecheck}`;
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const run = () => this.request(source, harnessId, typecheck, 0);
    const p = this.queue.then(run, run).then((r) => this.remember(harnessId, r, cached));
    this.queue = p.catch(() => undefined);
    this.pending.set(key, p);
    void p.finally(() => this.pending.delete(key)).catch(() => undefined);
    return p;
  }

  private remember(harnessId: string, r: CheckOutcome, previous?: CheckOutcome): CheckOutcome {
    // A compile-only request must not forget an earlier type check of the same source.
    const merged = r.types === null && previous?.types ? { ...r, types: previous.types } : r;
    this.cache.delete(harnessId);
    this.cache.set(harnessId, merged);
    while (this.cache.size > this.options.cacheEntries) this.cache.delete(this.cache.keys().next().value as string);
    return merged;
  }

  /** One request in the child; kills it over a cap and answers with a typed failure. */
  private async request(source: string, harnessId: string, typecheck: boolean, attempt: number): Promise<CheckOutcome> {
    const child = await this.ensureStarted();
    const pid = child.pid as number;
    const id = this.nextId++;
    this.counts.requests++;
    const outcome = await new Promise<CheckOutcome | 'retry'>((resolve) => {
      const t0 = performance.now();
      const cpu0 = usage(pid)?.cpuMs ?? 0;
      let compiled: CompileOutcome | null = null;
      let killed: { kind: 'cpu' | 'rss' | 'wall'; cpuMs: number; rssMb: number; wallMs: number } | null = null;
      let wallMs = this.options.wallMs;
      const done = (r: CheckOutcome | 'retry') => {
        clearInterval(poll);
        this.onReply = null;
        this.onExit = null;
        resolve(r);
      };
      const poll = setInterval(() => {
        const u = usage(pid);
        if (!u || killed) return;
        const cpuMs = u.cpuMs - cpu0;
        const overWall = performance.now() - t0 > wallMs;
        if (overWall && cpuMs < this.options.cpuMs / 2 && wallMs === this.options.wallMs) {
          // Less than half the CPU budget in the whole wall time: machine load, not the source. Once, 3x more.
          wallMs = 4 * this.options.wallMs;
          this.counts.extended++;
          return;
        }
        const over = cpuMs > this.options.cpuMs ? 'cpu' : u.rssMb > this.options.rssCapMb ? 'rss' : overWall ? 'wall' : null;
        if (over) {
          killed = { kind: over, cpuMs, rssMb: u.rssMb, wallMs };
          child.kill('SIGKILL');
        }
      }, this.options.pollMs);
      this.onReply = (m) => {
        if (m.type === 'compiled' && m.id === id) {
          compiled = m.outcome.ok ? m.outcome : { ...m.outcome, harnessId };
          if (!m.typeCheckFollows) done({ compile: compiled, types: null });
        } else if (m.type === 'typed' && m.id === id && compiled) done({ compile: compiled, types: m.outcome });
      };
      this.onExit = (code, signal) => {
        const stage = compiled ? 'type-checking' : 'compiling';
        const k = killed as { kind: 'cpu' | 'rss' | 'wall'; cpuMs: number; rssMb: number; wallMs: number } | null;
        // Died of something the source may not have caused (not a cap, not V8's heap): once more, fresh.
        if (attempt === 0 && !k && signal !== 'SIGABRT' && code !== 134) return done('retry');
        const failure = this.deathFailure(stage, k, code, signal);
        if (compiled) done({ compile: compiled, types: { ok: false, failure, violations: [limitViolation(failure)] } });
        else done({ compile: { ok: false, harnessId, failure, violations: [limitViolation(failure)] }, types: null });
      };
      try {
        child.send({ id, source, typecheck, cpuBudgetMs: Math.round(this.options.cpuMs * 0.7) } satisfies ValidatorRequest);
      } catch {
        child.kill('SIGKILL'); // the channel closed under us: the exit handler answers
      }
    });
    if (outcome !== 'retry') return outcome;
    this.counts.retries++;
    return this.request(source, harnessId, typecheck, attempt + 1);
  }

  private deathFailure(stage: string, k: { kind: string; cpuMs: number; rssMb: number; wallMs: number } | null, code: number | null, signal: NodeJS.Signals | null): HarnessFailure {
    const fix = 'simplify the types (deep recursive conditional types, large tuple, union or template-literal types) and very large expressions';
    const o = this.options;
    if (k?.kind === 'cpu') return { kind: 'timeout', reason: `${stage} used more than ${o.cpuMs} ms of CPU (${Math.round(k.cpuMs)} ms) and was stopped: ${fix}` };
    if (k?.kind === 'wall') return { kind: 'timeout', reason: `${stage} did not finish within ${k.wallMs} ms (${Math.round(k.cpuMs)} ms of CPU) and was stopped: ${fix}` };
    if (k?.kind === 'rss') return { kind: 'memory-limit', reason: `${stage} used more than ${o.rssCapMb} MiB of memory (${Math.round(k.rssMb)} MiB) and was stopped: ${fix}` };
    if (signal === 'SIGABRT' || code === 134) return { kind: 'memory-limit', reason: `${stage} ran out of the validator's ${o.heapMb} MiB heap: ${fix}` };
    return { kind: 'compile-error', reason: `the validator process died while ${stage} this source, twice (code ${code}, signal ${signal}): ${fix}` };
  }

  private ensureStarted(): Promise<ChildProcess> {
    if (this.child) return Promise.resolve(this.child);
    if (!this.starting) this.starting = this.start().finally(() => (this.starting = null));
    return this.starting;
  }

  private start(): Promise<ChildProcess> {
    return new Promise((resolve, reject) => {
      const child = fork(CHILD_ENTRY, [], {
        execArgv: ['--import', TSX_LOADER, `--max-old-space-size=${this.options.heapMb}`],
        // stderr is kept only as a short tail for a start-up failure: a V8 out-of-memory report is expected
        // later and says nothing the typed failure does not.
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        serialization: 'json',
      });
      // An idle validator must not keep the worker (or a test) alive; a request in progress keeps its poll timer.
      child.unref();
      child.channel?.unref();
      let stderrTail = '';
      child.stderr?.on('data', (d: Buffer) => {
        if (!ready) stderrTail = (stderrTail + d.toString('utf8')).slice(-1_500);
      });
      (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
      let ready = false;
      let startTimedOut = false;
      // Left referenced: it keeps a caller that awaits the start alive (the child and its channel are not).
      const startTimer = setTimeout(() => {
        startTimedOut = true;
        child.kill('SIGKILL');
      }, this.options.startMs);
      child.on('message', (m: ValidatorReply) => {
        if (m.type === 'ready') {
          ready = true;
          clearTimeout(startTimer);
          this.child = child;
          resolve(child);
        } else this.onReply?.(m);
      });
      child.on('exit', (code, signal) => {
        clearTimeout(startTimer);
        if (this.child === child) this.child = null;
        if (!ready) {
          const why = startTimedOut ? `did not start within ${this.options.startMs} ms` : `exited while starting (code ${code}, signal ${signal})`;
          return reject(new AgentSystemError(`the validator process ${why}${stderrTail ? `: ${stderrTail.trim()}` : ''}`));
        }
        if (this.closing) return;
        const working = this.onExit;
        if (working) {
          this.restarts++;
          working(code, signal);
        }
        // Replace it now, so the next harness does not wait for a start-up (and the restart is bounded).
        this.ensureStarted().catch(() => undefined);
      });
      child.on('error', (e) => {
        if (!ready) reject(new AgentSystemError(`the validator process could not be started: ${e.message}`));
      });
    });
  }

  /** Starts the child now (about 1-2 s: TypeScript, the contract and the lib), so the first check does not pay it. */
  async warmUp(): Promise<void> {
    await this.ensureStarted();
  }

  async close(): Promise<void> {
    this.closing = true;
    const child = this.child ?? (this.starting ? await this.starting.catch(() => null) : null);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.ref(); // keeps the caller alive until the child is gone
    child.disconnect();
    await exited;
  }
}

const compiles = (c: CompileOutcome) => c.ok && !c.compiled.syntaxErrors;

let shared: ValidatorPool | null = null;

/** The process's validator (default limits): the sandbox pool, the validator and the proposer share it and its cache. */
export function sharedValidator(): ValidatorPool {
  shared ??= new ValidatorPool();
  return shared;
}
