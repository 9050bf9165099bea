// Waiting for a comparison run's result without giving it up on a lost connection: a server restarting, a
// suspended laptop or a network blip ends the long poll with an error while the run itself goes on on the
// server, so the bench follows it again instead of counting it failed.
export interface FollowOptions {
  /** Pause before following again. */
  retryMs: number;
  /** Give up when the server has not answered for this long (the run still goes on there). */
  giveUpMs: number;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
}

export const DEFAULT_FOLLOW: FollowOptions = {
  retryMs: 5_000,
  giveUpMs: 30 * 60_000,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  now: () => Date.now(),
};

/** Errors that say how the run ended, or that it is gone: following again cannot change them. */
const FINAL = new Set(['WorkflowFailedError', 'WorkflowNotFoundError']);

/**
 * `handle.result()`, followed again after errors that are not the run's own end. A call that waited long
 * before failing counts as contact with the server, so only a server silent for `giveUpMs` ends the wait.
 */
export async function followResult<T>(handle: { result(): Promise<T> }, what: string, log: (line: string) => void, opts: FollowOptions = DEFAULT_FOLLOW): Promise<T> {
  let silentSince: number | null = null;
  for (;;) {
    const callStart = opts.now();
    try {
      return await handle.result();
    } catch (err) {
      const e = err as Error;
      if (FINAL.has(e.name)) throw err;
      const now = opts.now();
      // A long poll that ended in an error had the server until then; a quick failure adds to the silence.
      if (now - callStart > 2 * opts.retryMs) silentSince = now;
      else silentSince ??= callStart;
      const message = (e.message ?? String(err)).split('\n')[0];
      if (now - silentSince >= opts.giveUpMs) {
        throw new Error(`lost the Temporal server while following ${what} (${message}; no answer for ${Math.round((now - silentSince) / 60_000)} min). The run goes on there: run the same command again to follow it`);
      }
      log(`follow ${what}: ${message}; following it again in ${opts.retryMs / 1000} s (the run itself goes on on the server)`);
      await opts.sleep(opts.retryMs);
    }
  }
}
