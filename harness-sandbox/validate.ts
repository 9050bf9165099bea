// The harness validator: every violation in a harness file, in one report. Static findings (syntax,
// imports, async, host globals), type errors against the contract types, load failures, the exported
// shape and config, and tool parameters against the environment's tools. Used before a candidate is scored (invalid ones are logged, not fatal).

import type { ToolSpec } from '../agent/environment';
import type { HarnessManifest, HarnessViolation } from '../agent/harness-contract';
import { checkToolParams } from '../agent/harness-contract';
import type { HarnessFailure } from '../agent/harness-runner';
import { compileHarness } from './compile';
import { typecheckHarness } from './typecheck';
import type { SandboxPool } from './pool';

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
}

export async function validateHarnessSource(pool: SandboxPool, source: string, tools: readonly ToolSpec[], options: ValidateOptions = {}): Promise<HarnessValidation> {
  const compiled = compileHarness(source);
  const violations: HarnessViolation[] = [...compiled.violations];
  if (options.typecheck !== false && !compiled.syntaxErrors) violations.push(...typecheckHarness(source));
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
