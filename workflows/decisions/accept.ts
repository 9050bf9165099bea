// Owns the harness accept rule and the phase's Pareto frontier (docs/method.md, "Harness phase:
// Meta-Harness", accept rule and frontier): which candidate of the phase archive carries into the next
// cycle, and which candidates are non-dominated on (success rate up, mean turns down).
import { DecisionInputError, assertFinite, assertInteger, assertRate, formatNumber } from './errors';

/** One scored, valid candidate of a harness phase archive (invalid candidates never get here). */
export interface CandidateScore {
  id: string;
  /** Training success rate on D_harness, in [0, 1]. */
  successRate: number;
  meanTurns: number;
  meanTokens: number;
  /** True for the harness the phase started from (h0, re-scored in round 0). */
  incoming: boolean;
  /** Position in the phase archive; 0 for the incoming harness. */
  order: number;
}

/**
 * The accept order, as a comparator (negative: `a` ranks first): higher success rate first; then fewer
 * mean turns; equal on both, the incoming harness first (it survives exact ties), then the lower archive
 * order, then the lower id (only so the order is total; ids are unique in an archive). Comparisons are
 * exact: two candidates tie only on identical numbers.
 */
export function compareCandidates(a: CandidateScore, b: CandidateScore): number {
  if (a.successRate !== b.successRate) return a.successRate > b.successRate ? -1 : 1;
  if (a.meanTurns !== b.meanTurns) return a.meanTurns < b.meanTurns ? -1 : 1;
  if (a.incoming !== b.incoming) return a.incoming ? -1 : 1;
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return 0;
}

/**
 * Picks the harness that carries into the next cycle: the first candidate under `compareCandidates`.
 * The archive must hold exactly one incoming candidate and unique ids. A candidate that ties the best
 * success rate with fewer turns IS accepted (it is still not a new best for harness patience, which looks
 * at success only).
 */
export function selectAccepted(candidates: CandidateScore[]): { accepted: CandidateScore; reason: string } {
  assertCandidates(candidates);
  const ranked = [...candidates].sort(compareCandidates);
  const accepted = ranked[0];
  const incoming = candidates.find((c) => c.incoming) as CandidateScore;
  return { accepted, reason: explainAccept(accepted, incoming, ranked[1]) };
}

function explainAccept(accepted: CandidateScore, incoming: CandidateScore, runnerUp: CandidateScore | undefined): string {
  const show = (c: CandidateScore) => `${c.id} (success ${formatNumber(c.successRate)}, mean turns ${formatNumber(c.meanTurns)})`;
  if (accepted.incoming) {
    if (runnerUp === undefined) return `kept incoming ${show(incoming)}: no other candidate in the archive`;
    const tie = runnerUp.successRate === incoming.successRate && runnerUp.meanTurns === incoming.meanTurns;
    return tie
      ? `kept incoming ${show(incoming)}: best challenger ${show(runnerUp)} ties on both, the incoming harness stays`
      : `kept incoming ${show(incoming)}: no candidate beats it; best challenger ${show(runnerUp)}`;
  }
  if (accepted.successRate > incoming.successRate) {
    return `accepted ${show(accepted)}: higher success than incoming ${show(incoming)}`;
  }
  return `accepted ${show(accepted)}: ties incoming ${show(incoming)} on success with fewer mean turns (not a new best for patience)`;
}

/** Which cost the frontier minimises; the method allows mean turns (default) or mean tokens. */
export type FrontierCostAxis = 'meanTurns' | 'meanTokens';

/**
 * The Pareto frontier of the archive: candidates not dominated on (maximise successRate, minimise the
 * cost axis). `b` dominates `a` when b is >= on success and <= on cost with at least one strict; so
 * candidates equal on both are all kept. Returned in archive order (`order`, then id), inputs untouched.
 */
export function paretoFrontier(candidates: CandidateScore[], costAxis: FrontierCostAxis = 'meanTurns'): CandidateScore[] {
  for (const c of candidates) assertCandidate(c);
  const frontier = candidates.filter((a) => !candidates.some((b) => dominates(b, a, costAxis)));
  return frontier.sort((a, b) => (a.order !== b.order ? a.order - b.order : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** True when `b` dominates `a` on (success up, cost down). */
export function dominates(b: CandidateScore, a: CandidateScore, costAxis: FrontierCostAxis = 'meanTurns'): boolean {
  const noWorse = b.successRate >= a.successRate && b[costAxis] <= a[costAxis];
  const better = b.successRate > a.successRate || b[costAxis] < a[costAxis];
  return noWorse && better;
}

function assertCandidates(candidates: CandidateScore[]): void {
  if (!Array.isArray(candidates) || candidates.length === 0) {
    throw new DecisionInputError('selectAccepted needs a non-empty archive (at least the incoming harness)');
  }
  for (const c of candidates) assertCandidate(c);
  const incomingCount = candidates.filter((c) => c.incoming).length;
  if (incomingCount !== 1) {
    throw new DecisionInputError(`selectAccepted needs exactly one incoming harness in the archive, got ${incomingCount}`);
  }
  const ids = new Set<string>();
  for (const c of candidates) {
    if (ids.has(c.id)) throw new DecisionInputError(`candidate ids must be unique in an archive; "${c.id}" repeats`);
    ids.add(c.id);
  }
}

function assertCandidate(c: CandidateScore): void {
  if (c === null || typeof c !== 'object' || typeof c.id !== 'string') throw new DecisionInputError('a candidate needs a string id');
  assertRate(c.successRate, `successRate of ${c.id}`);
  assertFinite(c.meanTurns, `meanTurns of ${c.id}`);
  assertFinite(c.meanTokens, `meanTokens of ${c.id}`);
  if (c.meanTurns < 0 || c.meanTokens < 0) throw new DecisionInputError(`mean turns and tokens of ${c.id} must be >= 0`);
  if (typeof c.incoming !== 'boolean') throw new DecisionInputError(`incoming of ${c.id} must be a boolean`);
  assertInteger(c.order, `order of ${c.id}`, 0);
}
