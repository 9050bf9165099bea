// One harness loaded into its own V8 isolate (inside a sandbox child process): load with a memory limit,
// call hooks with a CPU-time limit in a fresh context per batch, audit a seeded sample of calls for purity,
// and turn every way that can fail into a typed HarnessFailure.
// CPU time, not wall time, decides a timeout: isolated-vm's `timeout` is wall-clock, so a call that hits
// it is re-run with a longer wall allowance unless it really used its CPU budget (hooks are pure, so
// re-running is safe). CPU is this process's main thread's (thread-cpu.ts), not `isolate.cpuTime`, which
// on isolated-vm 5.0.4 counts wall time while entered.
// Memory: no `onCatastrophicError` handler. isolated-vm runs that handler on the Node main thread, which
// is blocked in applySync while a hook runs, so a V8 out-of-memory inside a hook deadlocked the process
// (0 % CPU until the worker's deadline). Without it V8 aborts the process within seconds and the pool
// reports memory-limit. V8 does not check its heap limit on every allocation (one 150 MiB string fits in a
// 64 MiB isolate), so the heap is also measured after every call and the isolate disposed above its limit.

import ivm from 'isolated-vm';
import type { HookName } from '../agent/harness-contract';
import type { HarnessFailure, HarnessFailureKind } from '../agent/harness-runner';
import { BOOTSTRAP_JS } from './bootstrap-source';
import { mainThreadCpuMs } from './thread-cpu';

export interface IsolateLimits {
  /** Heap limit of the isolate in MiB (isolated-vm minimum 8); checked again after every call. */
  isolateMemoryMb: number;
  /** CPU time one hook call (or the module's top level) may use, in ms. Generous: healthy hooks use < 1 ms. */
  hookCpuMs: number;
  /** Purity audit: about one hook call in this many is re-run in a fresh context and must give the same result; 0 = off. */
  auditEvery: number;
  /** Seed of the audit's sample (which calls are re-run). */
  auditSeed: number;
}

/** Wall allowance of the first attempt and the most any attempt gets, in CPU limits. */
const FIRST_WALL_LIMITS = 1.5;
const MAX_WALL_LIMITS = 32;
const MAX_ATTEMPTS = 3;
/** Fresh contexts kept ready (made while the child is idle), and the share of the heap they may fill. */
const MAX_SPARES = 16;
const SPARE_HEAP_SHARE = 0.4;

export type HookValue = { ok: true; value: unknown } | { ok: false; failure: HarnessFailure };
type RawValue = { ok: true; raw: string } | { ok: false; failure: HarnessFailure };

export interface LoadedManifestData {
  config: unknown;
  hooks: string[];
  issues: Array<{ where: string; message: string }>;
}

/** One context with the bootstrap and the harness module loaded; `refs` are released with it. */
interface HarnessContext {
  context: ivm.Context;
  invoke: ivm.Reference;
  refs: ivm.Reference[];
  manifestRaw: string;
}

export class IsolateHarness {
  private readonly spares: HarnessContext[] = [];
  private rng: number;
  /** Audits run in recent batches: how many spare contexts the next batch is likely to need. */
  private readonly recentAudits: number[] = [];
  private auditsThisBatch = 0;
  /** Hook calls re-run by the purity audit in this isolate's lifetime. */
  audits = 0;

  private constructor(
    private readonly isolate: ivm.Isolate,
    private readonly scripts: { bootstrap: ivm.Script; module: ivm.Script },
    private current: HarnessContext | null,
    private readonly manifestRaw: string,
    readonly manifestData: LoadedManifestData,
    private readonly limits: IsolateLimits,
    seed: number,
  ) {
    this.rng = seed;
  }

  get disposed(): boolean {
    return this.isolate.isDisposed;
  }

  /** Creates the isolate and its first context (bootstrap plus the harness module's top level). */
  static load(code: string, limits: IsolateLimits): { ok: true; harness: IsolateHarness } | { ok: false; failure: HarnessFailure } {
    const isolate = new ivm.Isolate({ memoryLimit: limits.isolateMemoryMb });
    try {
      const scripts = {
        bootstrap: isolate.compileScriptSync(BOOTSTRAP_JS, { filename: 'whale-bootstrap.js' }),
        module: isolate.compileScriptSync(`(function (exports, require, module) {\n${code}\n})`, { filename: 'harness.js', lineOffset: -1 }),
      };
      const first = openContext(isolate, scripts, limits);
      if (!first.ok) {
        dispose(isolate);
        return { ok: false, failure: { ...first.failure, reason: `loading the module: ${first.failure.reason}` } };
      }
      const manifest = JSON.parse(first.ctx.manifestRaw.slice(1)) as LoadedManifestData;
      return { ok: true, harness: new IsolateHarness(isolate, scripts, first.ctx, first.ctx.manifestRaw, manifest, limits, seedFor(limits.auditSeed, code)) };
    } catch (e) {
      const failure = classifyHostError(isolate, e, 'compile-error');
      dispose(isolate);
      return { ok: false, failure };
    }
  }

  /**
   * Starts a batch in a fresh context (nothing a previous batch left in module variables, closures or
   * caches survives). The previous context is released.
   */
  renew(): { ok: true } | { ok: false; failure: HarnessFailure } {
    if (this.current) release(this.current);
    this.current = null;
    this.recentAudits.push(this.auditsThisBatch);
    if (this.recentAudits.length > 3) this.recentAudits.shift();
    this.auditsThisBatch = 0;
    const fresh = this.takeFresh();
    if (!fresh.ok) return fresh;
    this.current = fresh.ctx;
    return { ok: true };
  }

  /** Calls one hook on a JSON copy of `input`; a sampled call is also re-run in a fresh context. */
  call(hook: HookName, input: unknown): HookValue {
    if (!this.current) return { ok: false, failure: { kind: 'runtime-error', hook, reason: 'the harness has no loaded context (an earlier reload failed)' } };
    const json = JSON.stringify(input);
    const r = this.invoke(this.current, hook, json);
    if (!r.ok) return { ok: false, failure: { ...r.failure, hook } };
    if (this.limits.auditEvery > 0 && this.nextRandom() * this.limits.auditEvery < 1) {
      const audit = this.audit(hook, json, r.raw);
      if (audit) return { ok: false, failure: { ...audit, hook } };
    }
    return { ok: true, value: JSON.parse(r.raw.slice(1)) as unknown };
  }

  /**
   * Makes fresh contexts ahead of need, one per call so a request arriving meanwhile waits for at most
   * one. Returns false when no more are wanted. Bounded by count and by the heap they take.
   */
  prepareSpare(): boolean {
    if (this.disposed) return false;
    const want = Math.min(MAX_SPARES, 1 + Math.max(0, ...this.recentAudits, this.auditsThisBatch));
    if (this.spares.length >= want || this.heapBytes() > SPARE_HEAP_SHARE * this.limitBytes()) return false;
    const fresh = openContext(this.isolate, this.scripts, this.limits);
    if (!fresh.ok) return false; // the batch that needs it reports the failure when it opens its own
    this.spares.push(fresh.ctx);
    return true;
  }

  dispose(): void {
    dispose(this.isolate);
  }

  private invoke(ctx: HarnessContext, hook: HookName, json: string): RawValue {
    const r = callWithCpuLimit(this.isolate, this.limits, (t) => ctx.invoke.applySync(undefined, [hook, json], { timeout: t }));
    const heap = r.ok || r.failure.kind !== 'memory-limit' ? this.checkHeap() : null;
    if (heap) return heap;
    if (!r.ok && (r.failure.kind === 'timeout' || r.failure.kind === 'memory-limit')) dispose(this.isolate);
    return r;
  }

  /** Re-runs a call in a fresh context: a different outcome means the hook depends on earlier calls. */
  private audit(hook: HookName, json: string, expected: string): HarnessFailure | null {
    this.audits++;
    this.auditsThisBatch++;
    const fresh = this.takeFresh();
    if (!fresh.ok) return { ...fresh.failure, reason: `purity audit, reloading the module in a fresh context: ${fresh.failure.reason}` };
    const again = this.invoke(fresh.ctx, hook, json);
    release(fresh.ctx);
    if (!again.ok) {
      if (again.failure.kind === 'timeout' || again.failure.kind === 'memory-limit') return { ...again.failure, reason: `purity audit re-run: ${again.failure.reason}` };
      return { kind: 'contract-violation', reason: `purity audit: ${hook} succeeded here but failed when re-run on the same input in a fresh context (${again.failure.reason}); hooks must be pure functions of their input` };
    }
    if (again.raw === expected) return null;
    return { kind: 'contract-violation', reason: `purity audit: ${hook} returned a different result when re-run on the same input in a fresh context (${firstDifference(expected, again.raw)}); hooks must be pure functions of their input, with no memory of earlier calls` };
  }

  private takeFresh(): { ok: true; ctx: HarnessContext } | { ok: false; failure: HarnessFailure } {
    const ctx = this.spares.shift();
    const fresh = ctx ? { ok: true as const, ctx } : openContext(this.isolate, this.scripts, this.limits);
    if (!fresh.ok) return fresh;
    const heap = this.checkHeap();
    if (heap) return heap;
    if (fresh.ctx.manifestRaw !== this.manifestRaw) {
      release(fresh.ctx);
      return { ok: false, failure: { kind: 'contract-violation', reason: 'the module gave a different harness when loaded again in a fresh context: its top level must be deterministic' } };
    }
    return fresh;
  }

  /** A memory-limit failure (and a disposed isolate) if the heap is over the limit after a call. */
  private checkHeap(): { ok: false; failure: HarnessFailure } | null {
    if (this.disposed) return null;
    const bytes = this.heapBytes();
    if (bytes <= this.limitBytes()) return null;
    dispose(this.isolate);
    return { ok: false, failure: { kind: 'memory-limit', reason: `the isolate held ${(bytes / 2 ** 20).toFixed(0)} MiB after the call (heap plus external buffers), over its limit of ${this.limits.isolateMemoryMb} MiB` } };
  }

  private heapBytes(): number {
    const h = this.isolate.getHeapStatisticsSync();
    return h.used_heap_size + h.externally_allocated_size;
  }

  private limitBytes(): number {
    return this.limits.isolateMemoryMb * 2 ** 20;
  }

  /** mulberry32: the audit sample is reproducible from the seed and the order of calls. */
  private nextRandom(): number {
    this.rng = (this.rng + 0x6d2b79f5) | 0;
    let t = Math.imul(this.rng ^ (this.rng >>> 15), 1 | this.rng);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

/** A new context: bootstrap, then the module's top level under the CPU limit. */
function openContext(isolate: ivm.Isolate, scripts: { bootstrap: ivm.Script; module: ivm.Script }, limits: IsolateLimits): { ok: true; ctx: HarnessContext } | { ok: false; failure: HarnessFailure } {
  let context: ivm.Context | null = null;
  const refs: ivm.Reference[] = [];
  try {
    context = isolate.createContextSync();
    const pair = scripts.bootstrap.runSync(context, { reference: true, timeout: 5_000 });
    refs.push(pair);
    const load = pair.getSync(0, { reference: true }) as ivm.Reference;
    const invoke = pair.getSync(1, { reference: true }) as ivm.Reference;
    const factory = scripts.module.runSync(context, { reference: true, timeout: 5_000 });
    refs.push(load, invoke, factory);
    const r = callWithCpuLimit(isolate, limits, (t) => load.applySync(undefined, [factory.derefInto()], { timeout: t }));
    const ctx: HarnessContext = { context, invoke, refs, manifestRaw: r.ok ? r.raw : '' };
    if (!r.ok) {
      release(ctx);
      return r;
    }
    return { ok: true, ctx };
  } catch (e) {
    for (const ref of refs) ref.release();
    context?.release();
    return { ok: false, failure: classifyHostError(isolate, e, 'compile-error') };
  }
}

function release(ctx: HarnessContext): void {
  for (const ref of ctx.refs) ref.release();
  ctx.context.release();
}

function dispose(isolate: ivm.Isolate): void {
  if (!isolate.isDisposed) isolate.dispose();
}

function seedFor(seed: number, code: string): number {
  let h = (seed ^ 0x811c9dc5) >>> 0;
  for (let i = 0; i < code.length; i += 1 + (code.length >> 12)) h = Math.imul(h ^ code.charCodeAt(i), 0x01000193);
  return h | 0;
}

function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const show = (s: string) => JSON.stringify(s.slice(Math.max(1, i - 20), i + 40));
  return `first difference at character ${i}: ${show(a)} in the batch vs ${show(b)} in a fresh context`;
}

/**
 * Runs `run(wallMs)` until it returns or has used its CPU budget. The first wall allowance is 1.5 CPU
 * limits (an idle machine decides there); when it runs out with CPU to spare, the observed CPU share sets
 * the next allowance so one more attempt can spend the whole budget (capped at MAX_WALL_LIMITS limits).
 * The cost: a hook that loops forever while the machine's load drops may use more than its limit in a
 * re-run, up to that attempt's wall allowance; a healthy hook is never cut short by load.
 */
function callWithCpuLimit(isolate: ivm.Isolate, limits: IsolateLimits, run: (wallMs: number) => unknown): RawValue {
  const limit = limits.hookCpuMs;
  let wallMs = Math.ceil(limit * FIRST_WALL_LIMITS);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const cpu0 = mainThreadCpuMs();
    const t0 = performance.now();
    try {
      return decodeResult(run(wallMs));
    } catch (e) {
      if (isolate.isDisposed || !isTimeout(e)) return { ok: false, failure: classifyHostError(isolate, e, 'runtime-error') };
      const cpuMs = mainThreadCpuMs() - cpu0;
      const tookMs = performance.now() - t0;
      if (cpuMs >= limit * 0.95 || wallMs >= limit * MAX_WALL_LIMITS || attempt === MAX_ATTEMPTS - 1) {
        return { ok: false, failure: { kind: 'timeout', reason: `used ${cpuMs.toFixed(0)} ms of CPU (in ${tookMs.toFixed(0)} ms wall) against a limit of ${limit} ms CPU per call` } };
      }
      // The wall allowance ran out with CPU to spare: the machine is busy. Re-run (hooks are pure) with
      // enough wall time for the whole budget at the share of a core this process just got.
      const share = Math.max(cpuMs / Math.max(tookMs, 1), 1 / MAX_WALL_LIMITS);
      wallMs = Math.ceil(Math.min(limit * MAX_WALL_LIMITS, Math.max(2 * wallMs, (1.5 * limit) / share)));
    }
  }
  return { ok: false, failure: { kind: 'timeout', reason: 'no attempt finished' } };
}

function isTimeout(e: unknown): boolean {
  return e instanceof Error && /timed out/i.test(e.message);
}

function classifyHostError(isolate: ivm.Isolate, e: unknown, fallback: HarnessFailureKind): HarnessFailure {
  const message = e instanceof Error ? e.message : String(e);
  if (/memory limit/i.test(message)) return { kind: 'memory-limit', reason: `the isolate exceeded its heap limit (${message})` };
  if (isolate.isDisposed) return { kind: 'runtime-error', reason: `the isolate was disposed: ${message}` };
  if (/could not be cloned/i.test(message)) return { kind: 'bad-return-value', reason: message };
  return { kind: fallback, reason: message.slice(0, 800) };
}

function decodeResult(raw: unknown): RawValue {
  if (typeof raw !== 'string' || raw.length === 0) return { ok: false, failure: { kind: 'runtime-error', reason: 'the sandbox entry point returned no result' } };
  if (raw[0] === 'R') return { ok: true, raw };
  const err = JSON.parse(raw.slice(1)) as { kind: HarnessFailureKind; message: string };
  // V8 reports a refused ArrayBuffer allocation (over the isolate's limit) as a RangeError in the isolate.
  if (err.kind === 'runtime-error' && /Array buffer allocation failed/.test(err.message)) {
    return { ok: false, failure: { kind: 'memory-limit', reason: `the isolate's memory limit refused an allocation (${err.message})` } };
  }
  return { ok: false, failure: { kind: err.kind, reason: err.message } };
}
