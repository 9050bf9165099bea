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
