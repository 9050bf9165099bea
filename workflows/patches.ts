// Every patch id the run workflow passes to patched(): a decision that changed after runs were recorded.
// A history recorded before a patch has no marker for it and replays on the old path; new runs record the
// marker where the new path first runs. Plain constants, so the audit can read them without Temporal.

/** A proposal round that scored no candidate is counted but not judged by harness patience. */
export const SKIP_UNSCORED_ROUNDS_PATCH = 'harness-patience-skips-unscored-rounds';

/** A weight phase that patience ends gets a test evaluation of the (checkpoint, harness) pair it hands on. */
export const TEST_AT_ADAPTIVE_STOP_PATCH = 'test-eval-at-adaptive-weight-stop';

/**
 * A stop request that ends a phase inside a unit (the step in flight finished) goes to the final evaluation
 * at once; before, the next phase was opened and closed empty (a harness phase with -1 proposal rounds).
 */
export const STOP_ENDS_RUN_AFTER_PHASE_PATCH = 'stop-ends-run-after-phase';

/**
 * Worker Versioning: at a phase boundary, a run whose deployment's current version changed continues as new
 * onto that version (a run pinned to its build otherwise stays on it until it ends).
 */
export const UPGRADE_AT_PHASE_BOUNDARY_PATCH = 'continue-as-new-onto-new-worker-version-at-phase-boundary';

/**
 * Protocol 'equal' (budget.protocol): budget gates before weight steps, harness phases and proposal rounds, and
 * the exhausted-proposer stop. Only runs whose config names the protocol take these paths.
 */
export const EQUAL_BUDGET_PATCH = 'equal-rollout-budget-protocol';

/** test.everyRollouts: D_test evaluations at every multiple of that many training + search rollouts. */
export const TEST_GRID_PATCH = 'test-eval-rollout-grid';

/**
 * With test.everyRollouts, D_test is evaluated only at the grid points, the start and the end: the cadence,
 * per-round and phase-end evaluations are skipped, so every method is scored the same number of times at the
 * same rollout counts (best is a maximum over the same grid) and no test rollouts are spent off the grid.
 */
export const TEST_GRID_ONLY_PATCH = 'test-eval-grid-only';
