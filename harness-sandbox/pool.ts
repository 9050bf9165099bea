// The sandbox pool the model worker owns: a few child processes hosting harness isolates, harness
// loading (compile, static checks, load in an isolate, contract checks) and the sandboxed
// `HarnessRunner` the agent loop drives. Each harness sticks to one process so its isolate is reused.

import { AgentConfigError, AgentSystemError } from '../agent/errors';
import type { HarnessManifest, HarnessViolation, HookName } from '../agent/harness-contract';
import { HOOK_NAMES, checkHarnessConfig, harnessConfigSchema } from '../agent/harness-contract';
import type { HarnessFailure, HarnessRunner, PhaseCall, PhaseResult } from '../agent/harness-runner';
import { sharedValidator } from './validator-pool';
import type { IsolateLimits } from './isolate-harness';
import { SandboxProcess } from './sandbox-process';

export interface SandboxPoolOptions {
  /** Child processes (1 is right on 2 cores: the model needs the other core). */
  processes: number;
  /** Resident-memory cap per child, MiB. Must cover maxIsolates x isolateMemoryMb plus ~100 MiB of Node. */
  rssCapMb: number;
  /** Isolates kept loaded per child. */
  maxIsolates: number;
  /** Resident-memory sampling period, ms. */
  rssPollMs: number;
  /** V8 heap limit of each child's own heap (not the isolates'), MiB. */
  childHeapMb: number;
  /** Fixed part of the worker-side deadline of one request (child start-up, isolate loads), ms. */
  deadlineSlackMs: number;
  limits: IsolateLimits;
}

export const DEFAULT_SANDBOX_POOL_OPTIONS: SandboxPoolOptions = {
  processes: 1,
  rssCapMb: 768,
  maxIsolates: 4,
  rssPollMs: 50,
  deadlineSlackMs: 30_000,
  childHeapMb: 256,
  // The purity audit re-runs about 1 hook call in 16 in a fresh context (see isolate-harness.ts).
  limits: { isolateMemoryMb: 64, hookCpuMs: 1_000, auditEvery: 16, auditSeed: 0x5eed },
};

/** Options of a pool: any subset; `limits` may also name only some of its fields. */
export type SandboxPoolConfig = Partial<Omit<SandboxPoolOptions, 'limits'>> & { limits?: Partial<IsolateLimits> };

export type LoadHarnessResult =
  | { ok: true; runner: HarnessRunner; manifest: HarnessManifest; warnings: HarnessViolation[] }
  | { ok: false; failure: HarnessFailure; violations: HarnessViolation[] };

export class SandboxPool {
  private readonly processes: SandboxProcess[];
  readonly options: SandboxPoolOptions;

  constructor(options: SandboxPoolConfig = {}) {
    this.options = { ...DEFAULT_SANDBOX_POOL_OPTIONS, ...options, limits: { ...DEFAULT_SANDBOX_POOL_OPTIONS.limits, ...options.limits } };
    if (this.options.rssCapMb < 128) throw new AgentConfigError(`rssCapMb ${this.options.rssCapMb} is too small: a Node child alone needs ~100 MiB`);
    this.processes = Array.from({ length: Math.max(1, this.options.processes) }, () => new SandboxProcess(this.options));
  }

  /** Phase batches run, and where their time went: inside the child vs. the whole round trip (ms). */
  readonly timing = { batches: 0, childMs: 0, roundTripMs: 0 };
  /** Isolates the children have created, as last reported per child (reloads after eviction or failure). */
  private readonly isolateLoadsByProcess = new Map<SandboxProcess, number>();

  get isolateLoads(): number {
    return [...this.isolateLoadsByProcess.values()].reduce((a, b) => a + b, 0);
  }

  /** Unexpected child deaths so far (each was answered with a typed failure and a fresh child). */
  get restarts(): number {
    return this.processes.reduce((n, p) => n + p.restarts, 0);
  }

  get peakRssMb(): number {
    return Math.max(...this.processes.map((p) => p.peakRssMb));
  }

  /** Child pids (for tests that check the worker process survives). */
  pids(): Array<number | undefined> {
    return this.processes.map((p) => p.pid);
  }

  private processFor(harnessId: string): SandboxProcess {
    return this.processes[parseInt(harnessId.slice(0, 8), 16) % this.processes.length];
  }

  /**
   * Compiles, statically checks and loads a harness; on success returns its runner. Every violation
   * found is listed; `failure` summarises them.
   */
  async loadHarness(source: string, options: { staticChecks?: 'enforce' | 'skip' } = {}): Promise<LoadHarnessResult> {
    // Compiled in the validator child under its limits (and once per source): hostile source ends here as a
    // typed failure (compile-error, timeout, memory-limit), never as a throw or a blocked worker.
    const checked = await sharedValidator().compile(source);
    if (!checked.ok) return { ok: false, failure: checked.failure, violations: checked.violations };
    const compiled = checked.compiled;
    // 'skip' lets the validator check the rest of a file with static findings; the isolate enforces the
    // same rules at run time anyway (no require, no host globals), the static pass only explains them.
    const blocking = options.staticChecks === 'skip' ? compiled.violations.filter((v) => v.where === 'syntax') : compiled.violations;
    if (blocking.length > 0 || compiled.syntaxErrors) {
      return { ok: false, failure: { kind: 'compile-error', reason: summarise(compiled.violations) }, violations: compiled.violations };
    }
    const proc = this.processFor(compiled.harnessId);
    const outcome = await proc.request({ type: 'load', harnessId: compiled.harnessId, code: compiled.code, limits: this.options.limits }, this.deadlineMs(1));
    if (!outcome.ok) return { ok: false, failure: outcome.failure, violations: [{ where: 'load', message: outcome.failure.reason }] };
    const reply = outcome.reply;
    if (reply.type !== 'load-result') throw new AgentSystemError(`sandbox protocol error: expected load-result, got ${reply.type}`);
    if (!reply.result.ok) return { ok: false, failure: reply.result.failure, violations: [{ where: 'load', message: reply.result.failure.reason }] };
    const data = reply.result.manifestData;
    const violations: HarnessViolation[] = [...data.issues, ...checkHarnessConfig(data.config)];
    if (violations.length > 0) {
      return { ok: false, failure: { kind: 'contract-violation', reason: summarise(violations) }, violations };
    }
    const manifest: HarnessManifest = {
      harnessId: compiled.harnessId,
      config: harnessConfigSchema.parse(data.config),
      hooks: data.hooks.filter((h): h is HookName => (HOOK_NAMES as readonly string[]).includes(h)),
    };
    const runner: HarnessRunner = { manifest, runPhases: (calls) => this.runPhases(manifest, compiled.code, calls) };
    return { ok: true, runner, manifest, warnings: [] };
  }

  /** One IPC round trip for a whole batch of phase calls. */
  private async runPhases(manifest: HarnessManifest, code: string, calls: PhaseCall[]): Promise<PhaseResult[]> {
    if (calls.length === 0) return [];
    const proc = this.processFor(manifest.harnessId);
    const t0 = performance.now();
    const outcome = await proc.request({ type: 'run', manifest, code, limits: this.options.limits, calls }, this.deadlineMs(calls.length));
    if (!outcome.ok) return calls.map(() => ({ ok: false, failure: outcome.failure }));
    const reply = outcome.reply;
    if (reply.type !== 'run-result' || reply.results.length !== calls.length) throw new AgentSystemError('sandbox protocol error: bad run-result');
    this.timing.batches++;
    this.timing.childMs += reply.childMs;
    this.timing.roundTripMs += performance.now() - t0;
    this.isolateLoadsByProcess.set(proc, reply.isolateLoads);
    return reply.results;
  }

  /**
   * Worker-side backstop for a hung child: room for every call to use two hooks' CPU limits, plus the
   * child's own retries under load for a couple of them, plus start-up.
   */
  private deadlineMs(calls: number): number {
    return this.options.deadlineSlackMs + calls * 2 * this.options.limits.hookCpuMs * 1.5 + 2 * 35 * this.options.limits.hookCpuMs;
  }

  /** Starts every child process now (about 0.5-1 s each), so the first harness call does not pay it. */
  async warmUp(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.warmUp()));
  }

  async close(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.close()));
  }
}

function summarise(violations: HarnessViolation[]): string {
  const head = violations
    .slice(0, 5)
    .map((v) => `${v.where}${v.line ? ` (line ${v.line})` : ''}: ${v.message}`)
    .join('; ');
  return violations.length > 5 ? `${head}; and ${violations.length - 5} more` : head;
}
