// Messages and results between the worker (harness-sandbox/validator-pool.ts) and the validator child
// (harness-sandbox/validator-child.ts), which compiles and type-checks untrusted harness source.

import type { HarnessViolation } from '../agent/harness-contract';
import type { HarnessFailure } from '../agent/harness-runner';
import type { CompiledHarness } from './compile';

/**
 * The transpile + static checks of one source. `ok: false` means a limit stopped it (too big, nested too
 * deeply for the compiler, out of CPU or memory): the failure says which and what to change. Syntax errors
 * are `ok: true` with `compiled.syntaxErrors` set: the compile itself finished.
 */
export type CompileOutcome = { ok: true; compiled: CompiledHarness } | { ok: false; harnessId: string; failure: HarnessFailure; violations: HarnessViolation[] };

/** The type check of a source that compiled: its type errors, or the limit that stopped it. */
export type TypeOutcome = { ok: true; violations: HarnessViolation[] } | { ok: false; failure: HarnessFailure; violations: HarnessViolation[] };

export interface ValidatorRequest {
  id: number;
  source: string;
  typecheck: boolean;
  /** CPU the child may spend type-checking before it cancels the check itself (the worker kills it later). */
  cpuBudgetMs: number;
}

export type ValidatorReply =
  | { type: 'ready'; pid: number; contractFiles: number }
  /** `typeCheckFollows`: a `typed` message for the same id comes next. */
  | { type: 'compiled'; id: number; outcome: CompileOutcome; typeCheckFollows: boolean }
  | { type: 'typed'; id: number; outcome: TypeOutcome };

/** At most this many violations and characters per message go back (a proposer reads them; archives keep them). */
export const MAX_VIOLATIONS = 100;
export const MAX_MESSAGE_CHARS = 1_000;

/** A violation standing for a limit that stopped compiling or checking. */
export const limitViolation = (failure: HarnessFailure): HarnessViolation => ({ where: 'limit', message: failure.reason });
