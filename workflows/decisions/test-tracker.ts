// Owns the record of periodic test evaluations and the run's best and final mean@8 (docs/method.md,
// "Metrics and test cadence": best mean@8 is the maximum over the run's test evaluations; report the final too).
import { DecisionInputError, assertInteger, assertRate } from './errors';

/** One test evaluation: mean@8 on D_test under the harness and weights active at that time. */
export interface TestEvaluation {
  /** Weight steps done in the run when the evaluation ran. */
  atWeightStep: number;
  /** Budget rollouts (training + search) spent when the evaluation ran. */
  atRollouts: number;
  /** mean@8 in [0, 1]: average correctness of 8 samples per task, averaged over tasks (not pass@8). */
  meanAt8: number;
  /** Why it ran, e.g. "weight step 12", "end of harness phase 2", "end of run". */
  label: string;
}

/** Plain JSON; evaluations in the order they were recorded. */
export interface TestTracker {
  evaluations: TestEvaluation[];
  /** Best mean@8 over all evaluations so far; null before the first. */
  best: number | null;
  /** mean@8 of the latest evaluation (the end-of-run one, once the run ends); null before the first. */
  final: number | null;
}

export function emptyTestTracker(): TestTracker {
  return { evaluations: [], best: null, final: null };
}

/** Appends one evaluation; best becomes the maximum so far, final the value just recorded. */
export function recordTestEval(tracker: TestTracker, entry: TestEvaluation): TestTracker {
  if (entry === null || typeof entry !== 'object' || typeof entry.label !== 'string') {
    throw new DecisionInputError('a test evaluation needs a string label');
  }
  assertInteger(entry.atWeightStep, 'atWeightStep', 0);
  assertInteger(entry.atRollouts, 'atRollouts', 0);
  assertRate(entry.meanAt8, 'meanAt8');
  const copy: TestEvaluation = { atWeightStep: entry.atWeightStep, atRollouts: entry.atRollouts, meanAt8: entry.meanAt8, label: entry.label };
  return {
    evaluations: [...tracker.evaluations, copy],
    best: tracker.best === null ? entry.meanAt8 : Math.max(tracker.best, entry.meanAt8),
    final: entry.meanAt8,
  };
}
