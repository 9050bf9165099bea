// Owns the rollout ledger and the run-end budget test (docs/method.md, "Ledger and
// budget"). Target-model rollouts only; proposer cost is recorded elsewhere.
import { assertInteger } from './errors';

/** Three separate counters of target-model rollouts; plain JSON. */
export interface RolloutLedger {
  /** RSFT rollouts: prompts × samples per weight step. */
  training: number;
  /** Harness-search rollouts: round 0, candidate scoring and smoke runs included. */
  search: number;
  /** Test-set rollouts; never part of a budget. */
  test: number;
}

export function emptyLedger(): RolloutLedger {
  return { training: 0, search: 0, test: 0 };
}

/** Adds `n` (a non-negative integer) training rollouts; returns a new ledger. */
export function addTraining(ledger: RolloutLedger, n: number): RolloutLedger {
  assertInteger(n, 'training rollouts', 0);
  return { ...ledger, training: ledger.training + n };
}

/** Adds `n` (a non-negative integer) search rollouts; returns a new ledger. */
export function addSearch(ledger: RolloutLedger, n: number): RolloutLedger {
  assertInteger(n, 'search rollouts', 0);
  return { ...ledger, search: ledger.search + n };
}

/** Adds `n` (a non-negative integer) test rollouts; returns a new ledger. */
export function addTest(ledger: RolloutLedger, n: number): RolloutLedger {
  assertInteger(n, 'test rollouts', 0);
  return { ...ledger, test: ledger.test + n };
}

/** Rollouts that count against a budget and in "equal budget" comparisons: training + search, never test. */
export function budgetRollouts(ledger: RolloutLedger): number {
  return ledger.training + ledger.search;
}

/** Rollouts one weight step costs: prompts × samples per prompt (the paper: 256 × 8 = 2,048). */
export function weightStepRollouts(promptsPerStep: number, samplesPerPrompt: number): number {
  assertInteger(promptsPerStep, 'promptsPerStep', 0);
  assertInteger(samplesPerPrompt, 'samplesPerPrompt', 0);
  return promptsPerStep * samplesPerPrompt;
}

/** Rollouts scoring candidates on D_harness costs: |D_harness| × candidates × rollouts per task (1 in the paper). */
export function harnessScoringRollouts(harnessTasks: number, candidates: number, rolloutsPerTask = 1): number {
  assertInteger(harnessTasks, 'harnessTasks', 0);
  assertInteger(candidates, 'candidates', 0);
  assertInteger(rolloutsPerTask, 'rolloutsPerTask', 0);
  return harnessTasks * candidates * rolloutsPerTask;
}

/**
 * True when the run's budget is reached: all `totalWeightSteps` weight steps ran, or (when `maxRollouts`
 * is not null) training + search rollouts reached `maxRollouts`. The workflow checks it after weight steps:
 * the run ends after the weight phase that reaches the budget (harness phases sit only between weight
 * phases), so a true here ends the current weight phase and the run.
 */
export function runBudgetReached(weightStepsDone: number, totalWeightSteps: number, ledger: RolloutLedger, maxRollouts: number | null): boolean {
  assertInteger(weightStepsDone, 'weightStepsDone', 0);
  assertInteger(totalWeightSteps, 'totalWeightSteps', 0);
  if (maxRollouts !== null) assertInteger(maxRollouts, 'maxRollouts', 0);
  if (weightStepsDone >= totalWeightSteps) return true;
  return maxRollouts !== null && budgetRollouts(ledger) >= maxRollouts;
}
