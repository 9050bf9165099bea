// The comparison's evaluation grid (test.everyRollouts): every method evaluated on D_test at the same
// training + search rollout counts, each grid point recorded with the exact count at which it ran.
import { patched } from '@temporalio/workflow';
import { gridPointsDue } from './decisions';
import type { RunState } from './run-state';
import type { Acts } from './whale-run-activities';
import { evaluateOnTest } from './test-eval';
import { TEST_GRID_ONLY_PATCH, TEST_GRID_PATCH } from './patches';

function lastGridPoint(state: RunState): number {
  return state.tests.evaluations.reduce((m, e) => Math.max(m, e.gridPoint ?? 0), 0);
}

/**
 * Evaluates every grid point the run's rollouts reached since the last one, under the current (checkpoint,
 * harness) pair: one evaluation for all of them (an unchanged pair is not evaluated twice), one record each.
 * Runs without a grid never reach patched(), so never record its marker.
 */
export async function evaluateGridPoints(state: RunState, acts: Acts): Promise<void> {
  const every = state.config.test.everyRollouts;
  if (every === null || !patched(TEST_GRID_PATCH)) return;
  for (const g of gridPointsDue(state.ledger.training + state.ledger.search, every, lastGridPoint(state))) {
    await evaluateOnTest(state, acts, `grid-${g}`, { countsForBest: true });
    state.tests.evaluations[state.tests.evaluations.length - 1].gridPoint = g;
  }
}

/**
 * A D_test evaluation off the grid (the step cadence, an adaptive stop, a harness round or a phase end): made
 * when the run has no grid, skipped when it has one (runs recorded before that rule replay with it).
 */
export async function evaluateOffGrid(state: RunState, acts: Acts, label: string): Promise<void> {
  if (state.config.test.everyRollouts !== null && patched(TEST_GRID_ONLY_PATCH)) return;
  await evaluateOnTest(state, acts, label, { countsForBest: true });
}

/** The grid's evaluations for the run's summary; undefined without a grid. */
export function gridEvaluations(state: RunState): RunSummaryGrid | undefined {
  if (state.config.test.everyRollouts === null) return undefined;
  return state.tests.evaluations
    .filter((e) => e.gridPoint !== undefined)
    .map((e) => ({ gridPoint: e.gridPoint!, atRollouts: e.atRollouts, atWeightStep: e.atWeightStep, meanAt8: e.meanAt8 }));
}
type RunSummaryGrid = { gridPoint: number; atRollouts: number; atWeightStep: number; meanAt8: number }[];
