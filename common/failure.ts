// The one mapper from a thrown error to the failure Temporal records: the error's fault decides whether it
// is retried, its class name stays the failure type, its message and cause chain stay as they were.
// Workflow-safe (only @temporalio/common): the activity boundary and the run workflow both use it.
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { faultOf, isRetryableFault, isWhaleError, type Fault } from './errors';

/** Causes deeper than this are cut (a cause chain can be cyclic). */
const MAX_CAUSE_DEPTH = 8;

/** The failure's details carry the fault, so a history says whose fault a failure was. */
export interface FailureDetails {
  fault: Fault;
}

/**
 * Maps any thrown value to a TemporalFailure. A TemporalFailure (an ApplicationFailure the code built on
 * purpose, a cancellation) passes unchanged. Anything else becomes an ApplicationFailure with the error's
 * name as its type, its message and stack, `nonRetryable` unless the fault is `system` (errors that are not
 * WhaleErrors count as system faults, Temporal's own default), and its cause mapped the same way.
 */
export function toApplicationFailure(err: unknown, depth = 0): TemporalFailure {
  if (err instanceof TemporalFailure) return err;
  const fault = faultOf(err);
  const error = err instanceof Error ? err : undefined;
  const cause = error?.cause !== undefined && depth < MAX_CAUSE_DEPTH ? toApplicationFailure(error.cause, depth + 1) : undefined;
  const details: FailureDetails = { fault };
  const failure = ApplicationFailure.create({
    message: error ? error.message : String(err),
    type: typeName(err),
    nonRetryable: !isRetryableFault(fault),
    details: [details],
    cause,
  });
  if (error?.stack) failure.stack = error.stack;
  return failure;
}

/** A WhaleError's declared name; otherwise what Temporal itself would record (class name, then `name`). */
function typeName(err: unknown): string {
  if (isWhaleError(err)) return err.name;
  if (err instanceof Error) return err.constructor?.name || err.name;
  return typeof err;
}
