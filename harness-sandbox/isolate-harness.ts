// One harness loaded into its own V8 isolate (inside a sandbox child process): load with a memory limit,
// call hooks with a CPU-time limit, and turn every way that can fail into a typed HarnessFailure.
// CPU time, not wall time, decides a timeout: isolated-vm's `timeout` is wall-clock, so a call that hits
// it is re-run with a longer wall allowance unless it really used its CPU budget (hooks are pure, so
// re-running is safe). A loaded machine therefore cannot flip a healthy harness into a timeout.
// CPU is the CPU time of this process's main thread (thread-cpu.ts), not `isolate.cpuTime`: measured on
// this build (isolated-vm 5.0.4, Linux), `cpuTime` advanced by the full 1 s a stopped process spent
// off-CPU, i.e. it counts wall time while the isolate is entered. applySync runs the hook on the main
// thread; the whole process's CPU would also count V8's background threads (seen: 1.4 cores busy).

import ivm from 'isolated-vm';
import type { HookName } from '../agent/harness-contract';
import type { HarnessFailure, HarnessFailureKind } from '../agent/harness-runner';
import { BOOTSTRAP_JS } from './bootstrap-source';
import { CATASTROPHIC_EXIT_CODE } from './protocol';
import { mainThreadCpuMs } from './thread-cpu';

export interface IsolateLimits {
  /** Heap limit of the isolate in MiB (isolated-vm minimum 8). */
  isolateMemoryMb: number;
  /** CPU time one hook call (or the module's top level) may use, in ms. Generous: healthy hooks use < 1 ms. */
  hookCpuMs: number;
}

/** Wall allowance of the first attempt and the most any attempt gets, in CPU limits. */
const FIRST_WALL_LIMITS = 1.5;
const MAX_WALL_LIMITS = 32;
const MAX_ATTEMPTS = 3;

export type HookValue = { ok: true; value: unknown } | { ok: false; failure: HarnessFailure };

export interface LoadedManifestData {
  config: unknown;
  hooks: string[];
  issues: Array<{ where: string; message: string }>;
}

export class IsolateHarness {
  private constructor(
    private readonly isolate: ivm.Isolate,
    private readonly invokeRef: ivm.Reference,
    readonly manifestData: LoadedManifestData,
    private readonly limits: IsolateLimits,
  ) {}

  get disposed(): boolean {
    return this.isolate.isDisposed;
  }

  /** Creates the isolate, runs the bootstrap and the harness module's top level. */
  static load(code: string, limits: IsolateLimits): { ok: true; harness: IsolateHarness } | { ok: false; failure: HarnessFailure } {
    const isolate = new ivm.Isolate({
      memoryLimit: limits.isolateMemoryMb,
      // isolated-vm says the process must not continue after this; exiting lets the pool restart it.
      onCatastrophicError: () => process.exit(CATASTROPHIC_EXIT_CODE),
    });
    try {
      const context = isolate.createContextSync();
      const pair = isolate.compileScriptSync(BOOTSTRAP_JS, { filename: 'whale-bootstrap.js' }).runSync(context, { reference: true, timeout: 5_000 });
      const loadRef = pair.getSync(0, { reference: true }) as ivm.Reference;
      const invokeRef = pair.getSync(1, { reference: true }) as ivm.Reference;
      const factory = isolate
        .compileScriptSync(`(function (exports, require, module) {\n${code}\n})`, { filename: 'harness.js', lineOffset: -1 })
        .runSync(context, { reference: true, timeout: 5_000 });
      const r = callWithCpuLimit(isolate, limits, (t) => loadRef.applySync(undefined, [factory.derefInto()], { timeout: t }));
      if (!r.ok) {
        dispose(isolate);
        return { ok: false, failure: { ...r.failure, reason: `loading the module: ${r.failure.reason}` } };
      }
      return { ok: true, harness: new IsolateHarness(isolate, invokeRef, r.value as LoadedManifestData, limits) };
    } catch (e) {
      const failure = classifyHostError(isolate, e, 'compile-error');
      dispose(isolate);
      return { ok: false, failure };
    }
  }

  /** Calls one hook on a JSON copy of `input`. Timeouts and memory failures dispose the isolate. */
  call(hook: HookName, input: unknown): HookValue {
    const json = JSON.stringify(input);
    const r = callWithCpuLimit(this.isolate, this.limits, (t) => this.invokeRef.applySync(undefined, [hook, json], { timeout: t }));
    if (!r.ok) {
      if (r.failure.kind === 'timeout' || r.failure.kind === 'memory-limit') dispose(this.isolate);
      return { ok: false, failure: { ...r.failure, hook } };
    }
    return r;
  }

  dispose(): void {
    dispose(this.isolate);
  }
}

function dispose(isolate: ivm.Isolate): void {
  if (!isolate.isDisposed) isolate.dispose();
}

/**
 * Runs `run(wallMs)` until it returns or has used its CPU budget. The first wall allowance is 1.5 CPU
 * limits (an idle machine decides there); when it runs out with CPU to spare, the observed CPU share sets
 * the next allowance so one more attempt can spend the whole budget (capped at MAX_WALL_LIMITS limits).
 * The cost: a hook that loops forever while the machine's load drops may use more than its limit in a
 * re-run, up to that attempt's wall allowance; a healthy hook is never cut short by load.
 */
function callWithCpuLimit(isolate: ivm.Isolate, limits: IsolateLimits, run: (wallMs: number) => unknown): HookValue {
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

function decodeResult(raw: unknown): HookValue {
  if (typeof raw !== 'string' || raw.length === 0) return { ok: false, failure: { kind: 'runtime-error', reason: 'the sandbox entry point returned no result' } };
  const body = JSON.parse(raw.slice(1)) as unknown;
  if (raw[0] === 'R') return { ok: true, value: body };
  const err = body as { kind: HarnessFailureKind; message: string };
  // V8 reports a refused ArrayBuffer allocation (over the isolate's limit) as a RangeError in the isolate.
  if (err.kind === 'runtime-error' && /Array buffer allocation failed/.test(err.message)) {
    return { ok: false, failure: { kind: 'memory-limit', reason: `the isolate's memory limit refused an allocation (${err.message})` } };
  }
  return { ok: false, failure: { kind: err.kind, reason: err.message } };
}
