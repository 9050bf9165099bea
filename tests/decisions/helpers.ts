// Shared test helpers for the decision module: run a signal sequence through a phase, freeze inputs.
import {
  initialHarnessPatience, initialWeightPatience, observeHarnessRound, observeWeightStep,
  type HarnessPatienceParams, type HarnessRoundDecision, type WeightPatienceParams, type WeightPatienceState,
  type WeightStepDecision,
} from '../../workflows/decisions';

/** Runs one whole weight phase from the initial state; returns every decision and the final state. */
export function runWeightPhase(signals: (number | null)[], params: WeightPatienceParams): { decisions: WeightStepDecision[]; state: WeightPatienceState } {
  let state = initialWeightPatience();
  const decisions: WeightStepDecision[] = [];
  for (const signal of signals) {
    const out = observeWeightStep(state, signal, params);
    state = out.state;
    decisions.push(out.decision);
  }
  return { decisions, state };
}

/** The 1-based step of the first switch, or null if the rule never fires. */
export function firstSwitchStep(decisions: WeightStepDecision[]): number | null {
  const hit = decisions.find((d) => d.shouldSwitch);
  return hit === undefined ? null : hit.stepInPhase;
}

/** Runs proposal rounds with the given archive maxima; returns every decision. */
export function runHarnessPhase(archiveBests: number[], params: HarnessPatienceParams): HarnessRoundDecision[] {
  let state = initialHarnessPatience();
  return archiveBests.map((value) => {
    const out = observeHarnessRound(state, value, params);
    state = out.state;
    return out.decision;
  });
}

/** Freezes a plain JSON value all the way down, so any mutation by the code under test throws or shows. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

/** A JSON round trip of a state, to check it is plain data. */
export function jsonRoundTrip<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
