// Small helpers over the Temporal activity context that also work outside an activity (tests, library
// use): heartbeat, cancellation, and the non-retryable error for inputs at fault.
import { ApplicationFailure, Context } from '@temporalio/activity';

/** Heartbeats when running inside an activity; a no-op elsewhere. */
export function heartbeatSafe(details: unknown): void {
  try {
    Context.current().heartbeat(details);
  } catch {
    // Outside an activity: nothing to heartbeat to.
  }
}

/** The activity's cancellation signal, or a signal that never fires outside an activity. */
export function cancellationSignal(): AbortSignal {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return new AbortController().signal;
  }
}

/** Throws the cancellation reason once the activity was cancelled (worker shutdown, timeout, run closed). */
export function throwIfCancelled(): void {
  const signal = cancellationSignal();
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('activity cancelled');
}

/** The input is at fault: fail without retrying, with a message that says what to fix. */
export function configError(message: string): never {
  throw ApplicationFailure.nonRetryable(message, 'ConfigError');
}
