// The run workflow's side of the comparison protocols (docs/method.md, "Comparison protocols"): the costs and
// the rest of the budget read from the run state, handed to the pure gates of workflows/decisions/budget.ts.
import { patched } from '@temporalio/workflow';
import {
  fixedProposalRounds, harnessPhaseCosts, harnessPhaseGate, proposalRoundGate, proposerExhausted, restOfBudget,
  unproductiveRoundStreak, weightStepGate, type BudgetGate, type HarnessPhaseCosts,
} from './decisions';
import type { HarnessPhase, RunState } from './run-state';
import { stageAt, type StagePlan } from './whale-run-plan';
import { EQUAL_BUDGET_PATCH } from './patches';

/** True when the run is held to protocol 'equal' (runs without it never reach patched(), so never record it). */
export function equalBudget(state: RunState): boolean {
  return state.config.budget.protocol === 'equal' && patched(EQUAL_BUDGET_PATCH);
}

export function spentRollouts(state: RunState): number {
  return state.ledger.training + state.ledger.search;
}

function rest(state: RunState): number {
  return restOfBudget(state.config.budget.maxRollouts ?? 0, spentRollouts(state));
}

function stepCost(state: RunState): number {
  return state.config.weight.promptsPerStep * state.config.weight.samplesPerPrompt;
}

function costs(state: RunState): HarnessPhaseCosts {
  const h = state.config.harness;
  const tasks = Math.min(h.taskLimit ?? state.splitSizes.harness, state.splitSizes.harness);
  return harnessPhaseCosts(tasks, h.candidatesPerRound, h.rolloutsPerTask);
}

function alternating(state: RunState): boolean {
  return stageAt(state.config, 0)?.length === 'switching';
}

/** Rollouts that must stay after the current harness stage: one weight step when a weight phase follows it. */
function reserveAfterHarness(state: RunState): number {
  return alternating(state) || stageAt(state.config, state.stage + 1)?.kind === 'weight' ? stepCost(state) : 0;
}

/** Under protocol 'equal': true when the rest no longer pays for a whole weight step. */
export function weightBudgetSpent(state: RunState): boolean {
  return equalBudget(state) && !weightStepGate(rest(state), stepCost(state)).allowed;
}

/**
 * Under protocol 'equal', when a weight phase's switching rule asks for the harness phase: may it start? It
 * must pay for round 0, its proposal rounds at their cap (I - 1, or the patience cap) and one weight step
 * after it; if not, the weight phase goes on. Null when no protocol holds the run.
 */
export function harnessSwitchGate(state: RunState): BudgetGate | null {
  if (!equalBudget(state)) return null;
  const s = state.config.switching;
  const cap = s.kind === 'fixed' ? fixedProposalRounds(s.harnessRounds) : s.harnessMaxProposalRounds;
  return harnessPhaseGate(rest(state), costs(state), cap, stepCost(state));
}

/** Under protocol 'equal', a harness stage whose rest cannot pay round 0, one proposal round and its reserve is skipped. */
export function harnessStageUnaffordable(state: RunState): string | null {
  if (!equalBudget(state)) return null;
  const gate = harnessPhaseGate(rest(state), costs(state), 1, reserveAfterHarness(state));
  return gate.allowed ? null : gate.rule;
}

/**
 * Under protocol 'equal', a harness stage that is the run's last (harness-only, stagewise weights-first) has no
 * round cap: it proposes until the budget is spent or the proposer is exhausted.
 */
export function openEndedHarnessStage(state: RunState, plan: StagePlan | null): boolean {
  return plan?.kind === 'harness' && plan.length === 'budget' && equalBudget(state) && reserveAfterHarness(state) === 0;
}

/**
 * Under protocol 'equal', after a round: the rule that ends the harness phase, or null. A budget-length stage
 * ends when the proposer is exhausted; every harness phase ends when the rest cannot pay the next round at its
 * cap plus the weight step that must follow.
 */
export function harnessBudgetStop(state: RunState, phase: HarnessPhase, plan: StagePlan | null): string | null {
  if (!equalBudget(state)) return null;
  const lastRound = phase.nextRound - 1;
  if (plan?.length === 'budget' && lastRound >= 1) {
    const rows = phase.rows.map((r) => ({ round: r.round, evaluated: r.status === 'evaluated', sourceSha256: r.source.sha256 }));
    const verdict = proposerExhausted(unproductiveRoundStreak(rows, lastRound), state.config.budget.exhaustedAfterRounds);
    if (verdict.exhausted) return verdict.rule;
  }
  const gate = proposalRoundGate(rest(state), costs(state).proposalRound, reserveAfterHarness(state));
  return gate.allowed ? null : gate.rule;
}

/** The run's budget as its status and result report it (the bench prints the protocol beside each run). */
export function budgetReport(state: RunState) {
  const b = state.config.budget;
  const spent = spentRollouts(state);
  return {
    protocol: b.protocol, maxRollouts: b.maxRollouts, totalWeightSteps: b.totalWeightSteps, spentRollouts: spent,
    unspentRollouts: b.maxRollouts === null ? null : Math.max(0, b.maxRollouts - spent),
    withinBudget: b.maxRollouts === null ? null : spent <= b.maxRollouts,
  };
}
