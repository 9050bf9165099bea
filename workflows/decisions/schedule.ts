// Owns the fixed-schedule arithmetic: epochs to weight steps, the harness-phase round count and the
// test-evaluation cadence (docs/method.md, "Switching between phases" and "Metrics and test cadence").
import { DecisionInputError, assertFinite, assertInteger } from './errors';

/** Test evaluations run about every 0.1 epoch of weight steps (docs/method.md, "Metrics and test cadence"). */
export const TEST_EVAL_EVERY_EPOCHS = 0.1;

/**
 * Converts a length in epochs of D_weight to weight steps: round to the nearest integer, at least 1
 * (docs/method.md, "Epochs to steps": used for E, W, B, P and the test cadence).
 *
 * Rounding is half up (Math.round), applied after snapping the product to 9 decimals so that binary
 * floating-point noise cannot move a true half: 0.29 × 50 is 14.499999999999998 in doubles, yet it is
 * 14.5 steps and rounds to 15. Examples: 0.2 × 10 = 2, 0.04 × 10 = 0.4 → 1 (the minimum),
 * 0.25 × 10 = 2.5 → 3.
 */
export function epochsToSteps(epochs: number, stepsPerEpoch: number): number {
  assertFinite(epochs, 'epochs');
  if (epochs < 0) throw new DecisionInputError(`epochs must be >= 0, got ${epochs}`);
  assertInteger(stepsPerEpoch, 'stepsPerEpoch', 1);
  const exactSteps = Math.round(epochs * stepsPerEpoch * 1e9) / 1e9;
  return Math.max(1, Math.round(exactSteps));
}

/**
 * Weight steps in one epoch of D_weight: ceil(datasetSize / promptsPerStep), at least 1 (a partial last
 * batch still costs a step; the persistent sampler wraps into the next epoch).
 */
export function stepsPerEpoch(datasetSize: number, promptsPerStep: number): number {
  assertInteger(datasetSize, 'datasetSize', 0);
  assertInteger(promptsPerStep, 'promptsPerStep', 1);
  return Math.max(1, Math.ceil(datasetSize / promptsPerStep));
}

/**
 * Proposal rounds of a fixed-schedule harness phase. I counts round 0 (the re-scoring of the incoming
 * harness h0), so the phase runs I - 1 proposal rounds (docs/method.md, "Fixed schedule"; the paper's I = 6 is h0 plus
 * 5 proposal rounds). I = 1 means "re-score h0 only".
 */
export function fixedProposalRounds(harnessRoundsI: number): number {
  assertInteger(harnessRoundsI, 'harnessRoundsI', 1);
  return harnessRoundsI - 1;
}

/**
 * True when a periodic test evaluation is due after `weightStepsDone` weight steps of the run:
 * weightStepsDone > 0 and a multiple of `everySteps` (docs/method.md, "Cadence"; `everySteps` is
 * usually `epochsToSteps(TEST_EVAL_EVERY_EPOCHS, stepsPerEpoch)`). Evaluations at the end of a harness phase
 * and at the end of the run are the workflow's own calls, not this function's.
 */
export function testEvalDue(weightStepsDone: number, everySteps: number): boolean {
  assertInteger(weightStepsDone, 'weightStepsDone', 0);
  assertInteger(everySteps, 'everySteps', 1);
  return weightStepsDone > 0 && weightStepsDone % everySteps === 0;
}
