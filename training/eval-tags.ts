// The step tags evaluations pass to the rollout loop in place of a training step number: one fixed tag per
// kind of evaluation, so equal (checkpoint, harness) pairs draw equal samples wherever they are evaluated.

/** Test evaluations (the evaluateTest activity, exported agent bundles, the headroom measurements). */
export const TEST_EVAL_STEP = 0x7e57;
