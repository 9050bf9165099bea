// The harness validator: every violation in a harness file, in one report. Static findings (syntax,
// imports, async, host globals), type errors against the contract types, load failures, the exported
// shape and config, and tool parameters against the environment's tools. Used before a candidate is scored (invalid ones are logged, not fatal).
// Compiling and type-checking happen in the validator child under its limits (validator-pool.ts): any
// source, however hostile, ends as a report here (compile-error, timeout, memory-limit), never a throw.

import type { ToolSpec } from '../agent/environment';
import type { HarnessManifest, HarnessViolation } from '../agent/harness-contract';
import { checkToolParams } from '../agent/harness-contract';
import type { HarnessFailure } from '../agent/harness-runner';
import type { SandboxPool } from './pool';
import type { ValidatorPool } from './validator-pool';
import { sharedValidator } from './validator-pool';

export interface HarnessValidation {
  ok: boolean;
  harnessId: string;
  violations: HarnessViolation[];
  /** The first blocking failure, typed (compile-error, contract-violation, timeout, ...). */
  failure: HarnessFailure | null;
  manifest: HarnessManifest | null;
}

export interface ValidateOptions {
  /** Type-check against the contract types (0.4-1.5 s; on by default: it finds wrong shapes before they run). */
  typecheck?: boolean;
  /** The validator child to use (default: the process's shared one, whose cache the sandbox pool uses too). */
  validator?: ValidatorPool;
}

export async function validateHarnessSource(pool: SandboxPool, source: string, tools: readonly ToolSpec[], options: ValidateOptions = {}): Promise<HarnessValidation> {
  const checked = await (options.validator ?? sharedValidator()).check(source, { typecheck: options.typecheck !== false });
  if (!checked.compile.ok) {
    const c = checked.compile;
    return { ok: false, harnessId: c.harnessId, violations: c.violations, failure: c.failure, manifest: null };
  }
  const compiled = checked.compile.compiled;
  const violations: HarnessViolation[] = [...compiled.violations, ...(checked.types?.violations ?? [])];
  // A type check stopped by a limit: the source is not loaded at all (it was written to exhaust the compiler).
  if (checked.types && !checked.types.ok) return { ok: false, harnessId: compiled.harnessId, violations, failure: checked.types.failure, manifest: null };
  let failure: HarnessFailure | null = violations.length > 0 ? { kind: 'compile-error', reason: `${violations.length} static or type violation(s); first: ${violations[0].message}` } : null;
  let manifest: HarnessManifest | null = null;
  if (!compiled.syntaxErrors) {
    // Load even with static findings that are not syntax errors, so the report also covers shape and config.
    const loaded = await pool.loadHarness(source, { staticChecks: 'skip' });
    if (loaded.ok) {
      manifest = { ...loaded.manifest, harnessId: compiled.harnessId };
      const toolViolations = checkToolParams(loaded.manifest.config, tools);
      violations.push(...toolViolations);
      if (!failure && toolViolations.length > 0) failure = { kind: 'contract-violation', reason: toolViolations[0].message };
    } else {
      for (const v of loaded.violations) if (!violations.some((w) => w.where === v.where && w.message === v.message)) violations.push(v);
      failure ??= loaded.failure;
    }
  }
  return { ok: violations.length === 0, harnessId: compiled.harnessId, violations, failure, manifest: violations.length === 0 ? manifest : null };
}
