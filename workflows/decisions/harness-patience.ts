// Owns the adaptive harness-phase stop rule: the phase best training success rate over proposal rounds,
// the min-rounds + patience test, the hard cap and the optional stop-at-score (docs/method.md,
// "Switching between phases": harness patience, failed or empty round).
import { DecisionInputError, assertInteger, assertRate, formatNumber } from './errors';

export interface HarnessPatienceParams {
  /** Patience may stop the phase only once at least this many proposal rounds ran (default 5). */
  minProposalRounds: number;
  /** Stop after this many proposal rounds in a row without a strictly higher best (default 2). */
  patienceRounds: number;
  /** Hard cap on proposal rounds in one phase (default 15). */
  maxProposalRounds: number;
  /** Stop at once when the best success rate reaches this (e.g. 1 for 100%); null disables it (default). */
  stopAtScore: number | null;
}

/** The paper's and this project's defaults (docs/method.md, "Harness patience"). Frozen: no module-level mutable defaults. */
export const DEFAULT_HARNESS_PATIENCE: Readonly<HarnessPatienceParams> = Object.freeze({
  minProposalRounds: 5,
  patienceRounds: 2,
  maxProposalRounds: 15,
  stopAtScore: null,
});

/** Per-phase state; plain JSON. Start every harness phase from `initialHarnessPatience()`. */
export interface HarnessPatienceState {
  /** Proposal rounds observed so far (round 0, the re-scoring of h0, is not one). */
  proposalRounds: number;
  /** The phase best success rate; null stands for minus infinity (before proposal round 1). */
  best: number | null;
  /** Proposal rounds since the last strictly higher best (0 on the round that set it). */
  roundsSinceBest: number;
}

export interface HarnessRoundDecision {
  proposalRound: number;
  /** The phase best success rate after this round. */
  bestSuccess: number;
  newBest: boolean;
  roundsSinceBest: number;
  shouldStop: boolean;
  /** One line, with the numbers, explaining the outcome. */
  rule: string;
}

/** The state every harness phase starts from: no proposal round, best = minus infinity. */
export function initialHarnessPatience(): HarnessPatienceState {
  return { proposalRounds: 0, best: null, roundsSinceBest: 0 };
}

/**
 * Observes the archive after one proposal round and decides whether the harness phase stops.
 *
 * `bestSuccessInArchive` is the highest training success rate in the phase archive, the incoming h0
 * included. Best starts at minus infinity, so proposal round 1 always registers a best (which already
 * includes h0's score). A new best must be strictly higher (exact comparison: success rates are k / n
 * from the same arithmetic, and the archive maximum is one of them). A candidate that only ties on success
 * with fewer turns is accepted by the accept rule but is not a new best here.
 * Stop when (a) stopAtScore !== null and the best >= stopAtScore, or (b) proposalRounds >= max, or
 * (c) proposalRounds >= min and roundsSinceBest >= patience.
 * The archive only grows, so its maximum never falls; should a lower value arrive, the phase best keeps
 * the higher one.
 */
export function observeHarnessRound(
  state: HarnessPatienceState,
  bestSuccessInArchive: number,
  params: HarnessPatienceParams,
): { state: HarnessPatienceState; decision: HarnessRoundDecision } {
  assertHarnessPatienceParams(params);
  assertRate(bestSuccessInArchive, 'bestSuccessInArchive');
  const proposalRound = state.proposalRounds + 1;
  const newBest = state.best === null || bestSuccessInArchive > state.best;
  const bestSuccess = newBest || state.best === null ? bestSuccessInArchive : state.best;
  const roundsSinceBest = newBest ? 0 : state.roundsSinceBest + 1;
  const reachedScore = params.stopAtScore !== null && bestSuccess >= params.stopAtScore;
  const reachedCap = proposalRound >= params.maxProposalRounds;
  const patienceSpent = proposalRound >= params.minProposalRounds && roundsSinceBest >= params.patienceRounds;
  const shouldStop = reachedScore || reachedCap || patienceSpent;
  const rule = explainStop({ proposalRound, bestSuccess, newBest, roundsSinceBest, reachedScore, reachedCap, patienceSpent, params });
  return {
    state: { proposalRounds: proposalRound, best: bestSuccess, roundsSinceBest },
    decision: { proposalRound, bestSuccess, newBest, roundsSinceBest, shouldStop, rule },
  };
}

/**
 * Counts a proposal round that produced no scored candidate (the proposer failed or wrote nothing, or every
 * candidate was invalid) without checking patience on it, as the reference release does: the round counts
 * toward the minimum, the rounds since the last best and the hard cap, but only the cap can stop the phase
 * on it (the archive gained nothing to judge). No best is registered here: while the phase has none, the
 * next scored round sets it, as in the reference. `bestSuccessInArchive` only fills the decision's number.
 */
export function skipHarnessRound(
  state: HarnessPatienceState,
  bestSuccessInArchive: number,
  params: HarnessPatienceParams,
): { state: HarnessPatienceState; decision: HarnessRoundDecision } {
  assertHarnessPatienceParams(params);
  assertRate(bestSuccessInArchive, 'bestSuccessInArchive');
  const proposalRound = state.proposalRounds + 1;
  const roundsSinceBest = state.best === null ? state.roundsSinceBest : state.roundsSinceBest + 1;
  const bestSuccess = state.best ?? bestSuccessInArchive;
  const reachedCap = proposalRound >= params.maxProposalRounds;
  const why = `proposal round ${proposalRound} scored no candidate, patience not checked`;
  const best = state.best === null ? 'no phase best yet' : `best success ${formatNumber(state.best)}`;
  const rule = reachedCap
    ? `stop: ${why}; ${proposalRound} proposal rounds >= hard cap ${params.maxProposalRounds}; ${best}`
    : `continue: ${why}; ${best}`;
  return {
    state: { proposalRounds: proposalRound, best: state.best, roundsSinceBest },
    decision: { proposalRound, bestSuccess, newBest: false, roundsSinceBest, shouldStop: reachedCap, rule },
  };
}

/**
 * Whether a harness phase can skip proposals after round 0: the cap allows none, or the re-scored incoming
 * harness already reaches stopAtScore. (A fixed schedule with I = 1 is the workflow's own check.)
 */
export function harnessStopsAfterRound0(incomingSuccess: number, params: HarnessPatienceParams): { shouldStop: boolean; rule: string } {
  assertHarnessPatienceParams(params);
  assertRate(incomingSuccess, 'incomingSuccess');
  if (params.maxProposalRounds === 0) return { shouldStop: true, rule: 'stop: hard cap of 0 proposal rounds' };
  if (params.stopAtScore !== null && incomingSuccess >= params.stopAtScore) {
    return { shouldStop: true, rule: `stop: incoming harness success ${formatNumber(incomingSuccess)} >= stop-at-score ${formatNumber(params.stopAtScore)}` };
  }
  return { shouldStop: false, rule: `continue: incoming harness success ${formatNumber(incomingSuccess)}, proposal rounds to run` };
}

function explainStop(input: {
  proposalRound: number; bestSuccess: number; newBest: boolean; roundsSinceBest: number;
  reachedScore: boolean; reachedCap: boolean; patienceSpent: boolean; params: HarnessPatienceParams;
}): string {
  const { proposalRound, bestSuccess, newBest, roundsSinceBest, reachedScore, reachedCap, patienceSpent, params } = input;
  const best = `best success ${formatNumber(bestSuccess)}${newBest ? ' (new best)' : ''}`;
  const reasons: string[] = [];
  if (reachedScore && params.stopAtScore !== null) reasons.push(`best ${formatNumber(bestSuccess)} >= stop-at-score ${formatNumber(params.stopAtScore)}`);
  if (reachedCap) reasons.push(`${proposalRound} proposal rounds >= hard cap ${params.maxProposalRounds}`);
  if (patienceSpent) reasons.push(`${proposalRound} proposal rounds >= min ${params.minProposalRounds} and ${roundsSinceBest} rounds without a new best >= patience ${params.patienceRounds}`);
  if (reasons.length > 0) return `stop: ${reasons.join('; ')}; ${best}`;
  if (proposalRound < params.minProposalRounds) {
    return `continue: ${proposalRound} proposal rounds < min ${params.minProposalRounds}; ${best}`;
  }
  return `continue: ${roundsSinceBest} rounds without a new best < patience ${params.patienceRounds}; ${best}`;
}

/** Throws a DecisionInputError unless the counts are non-negative integers and stopAtScore is null or a rate. */
export function assertHarnessPatienceParams(params: HarnessPatienceParams): void {
  if (params === null || typeof params !== 'object') throw new DecisionInputError('harness patience params are missing');
  assertInteger(params.minProposalRounds, 'minProposalRounds', 0);
  assertInteger(params.patienceRounds, 'patienceRounds', 0);
  assertInteger(params.maxProposalRounds, 'maxProposalRounds', 0);
  if (params.stopAtScore !== null) assertRate(params.stopAtScore, 'stopAtScore');
}
