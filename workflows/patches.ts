// Every patch id the run workflow passes to patched(): a decision that changed after runs were recorded.
// A history recorded before a patch has no marker for it and replays on the old path; new runs record the
// marker where the new path first runs. Plain constants, so the audit can read them without Temporal.

/** A proposal round that scored no candidate is counted but not judged by harness patience. */
export const SKIP_UNSCORED_ROUNDS_PATCH = 'harness-patience-skips-unscored-rounds';

/** A weight phase that patience ends gets a test evaluation of the (checkpoint, harness) pair it hands on. */
export const TEST_AT_ADAPTIVE_STOP_PATCH = 'test-eval-at-adaptive-weight-stop';
