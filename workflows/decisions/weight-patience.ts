// Owns the adaptive weight-phase switch rule: a moving mean of the per-step training signal, its phase
// best, and the burn-in + patience test that ends a weight phase (docs/method.md, "Switching between
// phases": weight patience, missing signal). Training signals only; the test set never enters here.
import { DecisionInputError, assertFinite, assertInteger, formatNumber } from './errors';

/** W, B and P of the paper, already converted from epochs to steps with `epochsToSteps`. */
export interface WeightPatienceParams {
  /** W: how many of the latest signals the moving mean averages (>= 1). */
  windowSteps: number;
  /** B: the switch may fire only once more than this many steps ran in the phase (>= 0). */
  burnInSteps: number;
  /** P: the switch needs at least this many steps since the phase's last new best (>= 0). */
  patienceSteps: number;
}

/** Per-phase state; plain JSON. Start every weight phase from `initialWeightPatience()`. */
export interface WeightPatienceState {
  /** The latest non-missing signals, oldest first, at most `windowSteps` of them. */
  window: number[];
  /** The phase's best moving mean; null stands for minus infinity (no valid signal yet). */
  best: number | null;
  /** Steps run in this phase, missing-signal steps included (1-based once a step ran). */
  stepsInPhase: number;
  /** The step (1-based within the phase) of the last new best; 0 while there is none. */
  lastBestStep: number;
  /** How many non-missing signals the phase has seen. */
  signalsSeen: number;
}

/** What one weight step decided, for the workflow and the audit report. */
export interface WeightStepDecision {
  stepInPhase: number;
  /** s_t, or null when every rollout of the step failed to run. */
  signal: number | null;
  /** m_t, or null on a missing-signal step (no m_t is formed then). */
  movingMean: number | null;
  /** The phase best after this step (null: none yet). */
  best: number | null;
  newBest: boolean;
  /** stepInPhase - lastBestStep (counted from the phase start while there is no best). */
  stepsSinceBest: number;
  shouldSwitch: boolean;
  /** One line, with the numbers, explaining the outcome. */
  rule: string;
}

/**
 * Relative tolerance under which two moving means count as equal. It absorbs floating-point rounding only
 * (the mean of [0.1, 0.1, 0.1] is 0.10000000000000002 in doubles and must not be a "new best" over 0.1);
 * it is not a min-delta, which the method rules out: real differences between means of binary rewards are
 * at least 1 / (rollouts per step × W), many orders of magnitude above it.
 */
export const MOVING_MEAN_EQUALITY_TOLERANCE = 1e-12;

/** True when `candidate` beats `best` strictly, beyond rounding noise; a null best is minus infinity. */
export function isStrictlyAbove(candidate: number, best: number | null): boolean {
  if (best === null) return true;
  const scale = Math.max(1, Math.abs(candidate), Math.abs(best));
  return candidate - best > MOVING_MEAN_EQUALITY_TOLERANCE * scale;
}

/** The state every weight phase starts from: window, best and counters reset (docs/method.md, "Weight patience"). */
export function initialWeightPatience(): WeightPatienceState {
  return { window: [], best: null, stepsInPhase: 0, lastBestStep: 0, signalsSeen: 0 };
}

/**
 * Observes one finished weight step and decides whether the weight phase ends after it.
 *
 * - s_t = `signal`, the mean reward of the step's rollouts (a step where nothing was accepted is a valid 0).
 * - m_t = mean of the last W signals (the prefix mean until W exist).
 * - New best iff m_t > best strictly (null best = minus infinity; no min-delta).
 * - Switch iff stepsInPhase > B and stepsInPhase - lastBestStep >= P. With B = P = 15 and no improvement
 *   after step 1, the earliest switch is at step 16.
 * - A null signal (every rollout failed to run) is a missing signal: it counts as a step of the phase but
 *   does not enter the window, cannot be a new best and never fires the switch on that step.
 */
export function observeWeightStep(
  state: WeightPatienceState,
  signal: number | null,
  params: WeightPatienceParams,
): { state: WeightPatienceState; decision: WeightStepDecision } {
  assertWeightPatienceParams(params);
  const stepInPhase = state.stepsInPhase + 1;
  if (signal === null) {
    const stepsSinceBest = stepInPhase - state.lastBestStep;
    const next: WeightPatienceState = { ...state, window: [...state.window], stepsInPhase: stepInPhase };
    const rule = `hold: step ${stepInPhase} signal missing (no rollout ran), not in the window and cannot fire; ${describeSinceBest(stepsSinceBest, state.lastBestStep)}`;
    return {
      state: next,
      decision: { stepInPhase, signal: null, movingMean: null, best: state.best, newBest: false, stepsSinceBest, shouldSwitch: false, rule },
    };
  }
  assertFinite(signal, 'signal');
  const window = [...state.window, signal].slice(-params.windowSteps);
  const movingMean = meanOf(window);
  const newBest = isStrictlyAbove(movingMean, state.best);
  const best = newBest ? movingMean : state.best;
  const lastBestStep = newBest ? stepInPhase : state.lastBestStep;
  const stepsSinceBest = stepInPhase - lastBestStep;
  const pastBurnIn = stepInPhase > params.burnInSteps;
  const patienceSpent = stepsSinceBest >= params.patienceSteps;
  const shouldSwitch = pastBurnIn && patienceSpent;
  const next: WeightPatienceState = { window, best, stepsInPhase: stepInPhase, lastBestStep, signalsSeen: state.signalsSeen + 1 };
  const rule = explainSwitch({ stepInPhase, movingMean, newBest, stepsSinceBest, lastBestStep, pastBurnIn, patienceSpent, params });
  return { state: next, decision: { stepInPhase, signal, movingMean, best, newBest, stepsSinceBest, shouldSwitch, rule } };
}

function explainSwitch(input: {
  stepInPhase: number; movingMean: number; newBest: boolean; stepsSinceBest: number; lastBestStep: number;
  pastBurnIn: boolean; patienceSpent: boolean; params: WeightPatienceParams;
}): string {
  const { stepInPhase, movingMean, newBest, stepsSinceBest, lastBestStep, pastBurnIn, patienceSpent, params } = input;
  const mean = `moving mean ${formatNumber(movingMean)}${newBest ? ' (new best)' : ''}`;
  const burnIn = `${stepInPhase} steps ${pastBurnIn ? '>' : '<='} burn-in ${params.burnInSteps}`;
  const patience = `${describeSinceBest(stepsSinceBest, lastBestStep)} ${patienceSpent ? '>=' : '<'} patience ${params.patienceSteps}`;
  if (pastBurnIn && patienceSpent) return `switch: ${burnIn} and ${patience}; ${mean}`;
  if (!pastBurnIn) return `hold: ${burnIn}; ${mean}`;
  return `hold: ${burnIn} but ${patience}; ${mean}`;
}

function describeSinceBest(stepsSinceBest: number, lastBestStep: number): string {
  return lastBestStep === 0
    ? `${stepsSinceBest} steps since phase start (no best yet)`
    : `${stepsSinceBest} steps since best (step ${lastBestStep})`;
}

function meanOf(values: number[]): number {
  let sum = 0;
  for (const value of values) sum += value;
  return sum / values.length;
}

/** Throws a DecisionInputError unless W >= 1 and B, P >= 0 are integers. */
export function assertWeightPatienceParams(params: WeightPatienceParams): void {
  if (params === null || typeof params !== 'object') throw new DecisionInputError('weight patience params are missing');
  assertInteger(params.windowSteps, 'windowSteps', 1);
  assertInteger(params.burnInSteps, 'burnInSteps', 0);
  assertInteger(params.patienceSteps, 'patienceSteps', 0);
}
