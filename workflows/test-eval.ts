// Test evaluation from the workflow's side: mean@8 on D_test under the current checkpoint and harness,
// recorded with the rollout count at that moment; an evaluation of an unchanged (checkpoint, harness) pair
// is not repeated.
import type { RunState } from './run-state';
import type { Acts } from './whale-run-activities';
import { activitySummary } from './user-metadata';

function pairKey(state: RunState): string {
  return `${state.checkpoint.sha256}:${state.harness.sha256}`;
}

/** True when the latest test evaluation already scored the current (checkpoint, harness) pair. */
export function currentPairEvaluated(state: RunState): boolean {
  return state.lastEvalKey === pairKey(state) && state.tests.evaluations.length > 0;
}

export async function evaluateOnTest(state: RunState, acts: Acts, label: string, opts: { countsForBest: boolean }): Promise<number> {
  const key = pairKey(state);
  const previous = state.tests.evaluations[state.tests.evaluations.length - 1];
  if (state.lastEvalKey === key && previous) {
    if (opts.countsForBest) record(state, label, previous.meanAt8);
    return previous.meanAt8;
  }
  const result = await acts.model.evaluateTest({
    runId: state.runId, domain: state.config.domain, seed: state.config.seed, label,
    checkpoint: state.checkpoint, harness: state.harness,
    samplesPerTask: state.config.test.samplesPerTask, taskLimit: state.config.test.taskLimit,
  }, activitySummary.evaluateTest(label, state.weightStepsDone));
  state.ledger.test += result.rollouts;
  state.lastEvalKey = key;
  if (opts.countsForBest) record(state, label, result.meanAt8);
  else state.tests.evaluations.push(entry(state, label, result.meanAt8));
  return result.meanAt8;
}

function entry(state: RunState, label: string, meanAt8: number) {
  return { atWeightStep: state.weightStepsDone, atRollouts: state.ledger.training + state.ledger.search, meanAt8, label };
}

function record(state: RunState, label: string, meanAt8: number): void {
  state.tests.evaluations.push(entry(state, label, meanAt8));
  if (state.tests.best === null || meanAt8 > state.tests.best) state.tests.best = meanAt8;
}
