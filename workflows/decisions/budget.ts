// Owns the budget gates of the equal-total-rollout protocol (docs/method.md, "Comparison protocols"): may the
// next weight step, harness phase or proposal round start with what is left, and is the proposer exhausted.
import { assertInteger } from './errors';

/** What a gate decided, with the audit line that says why. */
export interface BudgetGate {
  allowed: boolean;
  /** Rollouts the unit needs left (its own cost at its cap plus what must stay for later). */
  needed: number;
  rule: string;
}

/** Rollouts left of a budget of `maxRollouts` after `spent` (training + search); never below 0. */
export function restOfBudget(maxRollouts: number, spent: number): number {
  assertInteger(maxRollouts, 'maxRollouts', 0);
  assertInteger(spent, 'spent rollouts', 0);
  return Math.max(0, maxRollouts - spent);
}

/** A weight step runs only when the rest pays for it whole (no partial steps). */
export function weightStepGate(rest: number, stepCost: number): BudgetGate {
  assertInteger(rest, 'rest of the budget', 0);
  assertInteger(stepCost, 'weight step cost', 1);
  const allowed = rest >= stepCost;
  return { allowed, needed: stepCost, rule: `${allowed ? '' : 'budget spent: '}rest ${rest} rollouts ${allowed ? '>=' : '<'} one weight step of ${stepCost}` };
}

export interface HarnessPhaseCosts {
  /** Round 0: the incoming harness re-scored on D_harness. */
  round0: number;
  /** One proposal round at its cap: every candidate valid and scored. */
  proposalRound: number;
}

/**
 * Cost of a harness phase's rounds at their cap: round 0 scores one harness on `harnessTasks` tasks, a proposal
 * round `candidates` harnesses; `rolloutsPerTask` each. Validation's smoke run costs no target-model rollout.
 */
export function harnessPhaseCosts(harnessTasks: number, candidates: number, rolloutsPerTask: number): HarnessPhaseCosts {
  assertInteger(harnessTasks, 'harnessTasks', 0);
  assertInteger(candidates, 'candidates', 1);
  assertInteger(rolloutsPerTask, 'rolloutsPerTask', 1);
  return { round0: harnessTasks * rolloutsPerTask, proposalRound: harnessTasks * candidates * rolloutsPerTask };
}

/**
 * May a harness phase of at most `maxProposalRounds` proposal rounds start? Only when the rest pays for round 0,
 * every proposal round at its cap and `reserve` rollouts after it (one weight step when a weight phase must
 * follow, 0 when the harness stage is the run's last).
 */
export function harnessPhaseGate(rest: number, costs: HarnessPhaseCosts, maxProposalRounds: number, reserve: number): BudgetGate {
  assertInteger(rest, 'rest of the budget', 0);
  assertInteger(maxProposalRounds, 'maxProposalRounds', 0);
  assertInteger(reserve, 'reserve', 0);
  const needed = costs.round0 + maxProposalRounds * costs.proposalRound + reserve;
  const allowed = rest >= needed;
  const what = `round 0 (${costs.round0}) + ${maxProposalRounds} proposal rounds at cap (${costs.proposalRound} each) + reserve ${reserve} = ${needed}`;
  return { allowed, needed, rule: allowed ? `harness phase affordable: rest ${rest} >= ${what}` : `harness phase not affordable: rest ${rest} < ${what}` };
}

/** May one more proposal round run? Only when the rest pays for it at its cap plus `reserve`. */
export function proposalRoundGate(rest: number, roundCost: number, reserve: number): BudgetGate {
  assertInteger(rest, 'rest of the budget', 0);
  assertInteger(roundCost, 'proposal round cost', 0);
  assertInteger(reserve, 'reserve', 0);
  const needed = roundCost + reserve;
  const allowed = rest >= needed;
  return { allowed, needed, rule: `${allowed ? '' : 'budget: '}rest ${rest} ${allowed ? '>=' : '<'} next proposal round at cap ${roundCost} + reserve ${reserve}` };
}

/** One archive row, as far as exhaustion cares: its round, whether it was scored, the sha256 of its source. */
export interface RoundRow {
  round: number;
  evaluated: boolean;
  sourceSha256: string;
}

/**
 * Consecutive proposal rounds, ending at `lastRound`, that scored no new harness: the proposer wrote nothing,
 * or every candidate was invalid or a byte-identical copy of a harness scored earlier in the phase (round 0's
 * incoming harness included). Rows of rounds after `lastRound` are ignored.
 */
export function unproductiveRoundStreak(rows: readonly RoundRow[], lastRound: number): number {
  assertInteger(lastRound, 'lastRound', 0);
  const seen = new Set<string>();
  const productive: boolean[] = Array.from({ length: lastRound + 1 }, () => false);
  const ordered = rows.filter((r) => r.round <= lastRound).slice().sort((a, b) => a.round - b.round);
  for (const r of ordered) {
    assertInteger(r.round, 'row round', 0);
    if (!r.evaluated) continue;
    if (!seen.has(r.sourceSha256)) productive[r.round] = true;
    seen.add(r.sourceSha256);
  }
  let streak = 0;
  for (let round = lastRound; round >= 1 && !productive[round]; round--) streak += 1;
  return streak;
}

/** The proposer counts as exhausted after `k` (>= 1) proposal rounds in a row that scored no new harness. */
export function proposerExhausted(streak: number, k: number): { exhausted: boolean; rule: string } {
  assertInteger(streak, 'streak', 0);
  assertInteger(k, 'exhaustedAfterRounds', 1);
  const exhausted = streak >= k;
  return { exhausted, rule: exhausted ? `proposer exhausted: ${streak} proposal rounds in a row scored no new harness (only duplicates, invalid candidates or none; limit ${k})` : `${streak} of ${k} unproductive rounds` };
}

/**
 * The comparison's evaluation grid (test.everyRollouts): the multiples of `every` rollouts that `spent` has
 * reached since the last grid point evaluated (`lastDone`, 0 before the first), in order. Several at once when
 * one unit (a harness phase) spanned them; they are evaluated together at its end with the exact count recorded.
 */
export function gridPointsDue(spent: number, every: number, lastDone: number): number[] {
  assertInteger(spent, 'spent rollouts', 0);
  assertInteger(every, 'everyRollouts', 1);
  assertInteger(lastDone, 'last grid point', 0);
  const due: number[] = [];
  for (let g = (Math.floor(lastDone / every) + 1) * every; g <= spent; g += every) due.push(g);
  return due;
}
