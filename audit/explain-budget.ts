// The audit's side of the comparison protocols: the equal-total-rollout gates of workflows/decisions/budget.ts,
// the workflow's own pure rules, applied to the costs and spend a history recorded, so a switch the budget refused or forced is recomputed too.
import {
  fixedProposalRounds, harnessPhaseCosts, harnessPhaseGate, harnessStopsAfterRound0, proposalRoundGate, proposerExhausted,
  restOfBudget, unproductiveRoundStreak, weightStepGate, type BudgetGate, type HarnessPhaseCosts,
} from '../workflows/decisions';
import { EQUAL_BUDGET_PATCH } from '../workflows/patches';
import type { RunConfig, Switching } from '../workflows/run-config';
import { harnessPatienceParams, plannedProposalRounds, stageAt } from '../workflows/whale-run-plan';
import type { HarnessPhaseFact, Timeline } from './timeline';

/** What the gates need, read from the run's config and split sizes as the workflow reads them. */
export interface EqualBudget {
  maxRollouts: number;
  /** One weight step: prompts x samples per prompt. */
  stepCost: number;
  costs: HarnessPhaseCosts;
}

/** D_weight as the run trained on it: the seeded `weight.taskLimit` subset when set (epochs count over it). */
export function weightSplitSize(config: RunConfig, splitSizes: { weight: number }): number {
  return Math.min(splitSizes.weight, config.weight.taskLimit ?? splitSizes.weight);
}

/**
 * The run's equal-protocol inputs, or null when no protocol holds it: the config names protocol 'equal' and the
 * history carries the protocol's patch marker (the workflow applies the gates only then).
 */
export function equalBudgetOf(t: Timeline): EqualBudget | null {
  const c = t.config;
  if (!c || !t.splitSizes || c.budget.protocol !== 'equal' || !t.patches.some((p) => p.id === EQUAL_BUDGET_PATCH)) return null;
  const tasks = Math.min(c.harness.taskLimit ?? t.splitSizes.harness, t.splitSizes.harness);
  return {
    maxRollouts: c.budget.maxRollouts ?? 0, stepCost: c.weight.promptsPerStep * c.weight.samplesPerPrompt,
    costs: harnessPhaseCosts(tasks, c.harness.candidatesPerRound, c.harness.rolloutsPerTask),
  };
}

/** Does the rest after `spent` still pay for a whole weight step? */
export function weightStepBudget(b: EqualBudget, spent: number): BudgetGate {
  return weightStepGate(restOfBudget(b.maxRollouts, spent), b.stepCost);
}

/** May the harness phase a switching rule asks for start: round 0, its rounds at their cap, one weight step after? */
export function harnessSwitchBudget(b: EqualBudget, policy: Switching, spent: number): BudgetGate {
  const cap = policy.kind === 'fixed' ? fixedProposalRounds(policy.harnessRounds) : policy.harnessMaxProposalRounds;
  return harnessPhaseGate(restOfBudget(b.maxRollouts, spent), b.costs, cap, b.stepCost);
}

/** Rollouts that must stay after the harness stage at `stage`: one weight step when a weight phase follows it. */
function reserveAfterHarness(b: EqualBudget, config: RunConfig, stage: number): number {
  return stageAt(config, 0)?.length === 'switching' || stageAt(config, stage + 1)?.kind === 'weight' ? b.stepCost : 0;
}

/** Training + search rollouts after round `round` of a phase: its end count less what later rounds cost. */
export function spentAfterRound(phase: HarnessPhaseFact, round: number): number {
  const later = phase.rows.filter((r) => r.round > round).reduce((a, r) => a + (phase.candidateRollouts[r.name] ?? 0), 0);
  return phase.atRollouts - later;
}

/**
 * Under protocol 'equal', the first round whose end stops the harness phase and the rule, recomputed round by
 * round in the workflow's order: the planned cap (none for an open-ended last stage) or patience
 * (`patienceStop`), then the budget (proposer exhaustion in a budget-length stage; the next round at its cap
 * plus the reserve). `config` carries the switching policy in force. Null: no rule fired by the last round.
 */
export function harnessStopUnderBudget(
  b: EqualBudget, config: RunConfig, stage: number, phase: HarnessPhaseFact, patienceStop: (round: number) => string | null, trace: string[],
): { round: number; rule: string } | null {
  const plan = stageAt(config, stage) ?? { kind: 'harness' as const, length: 'switching' as const };
  const reserve = reserveAfterHarness(b, config, stage);
  const openEnded = plan.length === 'budget' && reserve === 0;
  const planned = openEnded ? null : plannedProposalRounds(config, plan);
  const params = harnessPatienceParams(config);
  const lastRound = Math.max(0, ...phase.rows.map((r) => r.round));
  for (let round = 0; round <= lastRound; round++) {
    let rule: string | null = null;
    if (round === 0) {
      const incoming = phase.rows.find((r) => r.round === 0);
      if (planned === 0) rule = 'fixed schedule: I = 1, round 0 only';
      else if (params && planned === null && harnessStopsAfterRound0(incoming?.successRate ?? 0, params).shouldStop) rule = harnessStopsAfterRound0(incoming?.successRate ?? 0, params).rule;
    } else if (planned !== null) {
      if (round >= planned) rule = `${plan.length === 'budget' ? 'round budget' : 'fixed schedule'}: ${round} proposal rounds done of ${planned}`;
    } else if (!openEnded) {
      rule = patienceStop(round);
    }
    if (!rule && plan.length === 'budget' && round >= 1) {
      const rows = phase.rows.map((r) => ({ round: r.round, evaluated: r.status === 'evaluated', sourceSha256: r.source.sha256 }));
      const verdict = proposerExhausted(unproductiveRoundStreak(rows, round), config.budget.exhaustedAfterRounds);
      if (verdict.exhausted) rule = verdict.rule;
    }
    const spent = spentAfterRound(phase, round);
    const gate = proposalRoundGate(restOfBudget(b.maxRollouts, spent), b.costs.proposalRound, reserve);
    trace.push(`budget after round ${round}: ${spent} of ${b.maxRollouts} rollouts spent; ${gate.rule}`);
    if (!rule && !gate.allowed) rule = gate.rule;
    if (rule) return { round, rule };
  }
  return null;
}
