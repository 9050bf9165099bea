// Owns the one error type of the decision module and the small input guards every rule shares.
//
// A DecisionInputError means the caller passed a value no rule can mean (NaN, a negative count, a success
// rate above 1, no incoming harness). That is a bug in WHALE (the calling workflow, or a config the parser
// should have refused), never a transient fault: its fault is `bug`, which is not retried. Inside the run
// workflow it fails the run at once with this message (whale-run.ts maps it at the workflow's boundary);
// it never fails a workflow task, which Temporal would retry forever. The root class has no imports, so
// this module stays plain TypeScript.
import { WhaleError } from '../../common/errors';

/** Thrown when a decision function receives an input outside its documented domain. */
export class DecisionInputError extends WhaleError {
  override readonly name = 'DecisionInputError';
  readonly fault = 'bug';
}

/** Throws unless `value` is a finite number (NaN and ±Infinity never belong in JSON state). */
export function assertFinite(value: number, what: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new DecisionInputError(`${what} must be a finite number, got ${String(value)}`);
  }
}

/** Throws unless `value` is a safe integer >= `min`. */
export function assertInteger(value: number, what: string, min: number): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new DecisionInputError(`${what} must be an integer >= ${min}, got ${String(value)}`);
  }
}

/** Throws unless `value` is a finite rate in [0, 1]. */
export function assertRate(value: number, what: string): void {
  assertFinite(value, what);
  if (value < 0 || value > 1) {
    throw new DecisionInputError(`${what} must lie in [0, 1], got ${String(value)}`);
  }
}

/** A short, deterministic rendering of a number for audit `rule`/`reason` strings (at most 4 decimals). */
export function formatNumber(value: number): string {
  return String(Number(value.toFixed(4)));
}
