// Small helpers over the Temporal activity context that also work outside an activity (tests, library
// use): heartbeat, cancellation, the error for inputs at fault, and the activity boundary where every thrown
// error becomes the failure its fault calls for.
import { Context } from '@temporalio/activity';
import { ConfigError } from '../common/errors';
import { toApplicationFailure } from '../common/failure';

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

/** The input is at fault: fail without retrying (a user-input fault), with a message that says what to fix. */
export function configError(message: string): never {
  throw new ConfigError(message);
}

/**
 * The activity boundary: wraps each activity so whatever it throws reaches Temporal through the one mapper
 * (`toApplicationFailure`: retryable only for system faults, type = error class name, message and cause
 * kept). The activity factories return their activities through it, so every worker serving them (the
 * product's, a test's) gets the same failures. A cancelled activity's error passes unchanged: the SDK
 * reports it as a cancellation only when it sees its own CancelledFailure or AbortError.
 */
export function atActivityBoundary<T extends object>(activities: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = typeof fn !== 'function' ? fn : async (...args: unknown[]) => {
      try {
        return await (fn as (...a: unknown[]) => Promise<unknown>).apply(activities, args);
      } catch (err) {
        throw cancellationSignal().aborted ? err : toApplicationFailure(err);
      }
    };
  }
  // Same keys, same signatures: only what a call throws changes.
  return wrapped as T;
}

/**
 * Runs `fn` while re-sending its latest heartbeat details every `everyMs` (the SDK throttles what reaches the
 * server). Progress heartbeats alone come once per unit of work, and one unit (a turn of a large rollout
 * batch, a minibatch on a loaded machine) can take longer than the heartbeat timeout: the attempt would time
 * out while working, and every retry the same way. `initial` is re-sent until `fn` beats itself; pass the
 * previous attempt's details there so a resume point is never replaced by an empty beat.
 */
export async function withHeartbeatTimer<T>(fn: (beat: (details: unknown) => void) => Promise<T>, initial: unknown, everyMs = 1_000): Promise<T> {
  let latest = initial;
  const beat = (details: unknown) => {
    latest = details;
    heartbeatSafe(details);
  };
  const timer = setInterval(() => {
    if (latest !== undefined) heartbeatSafe(latest);
  }, everyMs);
  try {
    return await fn(beat);
  } finally {
    clearInterval(timer);
  }
}
