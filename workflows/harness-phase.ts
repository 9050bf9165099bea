// One round of a harness phase (Meta-Harness): round 0 re-scores the incoming harness under the current
// weights; each proposal round asks the proposer for M candidates, validates them, scores the valid ones
// on D_harness, and applies the accept rule, frontier and patience from workflows/decisions.
import { ActivityFailure, ApplicationFailure, log, patched, workflowInfo } from '@temporalio/workflow';
import {
  harnessStopsAfterRound0, initialHarnessPatience, observeHarnessRound, paretoFrontier, selectAccepted, skipHarnessRound, type CandidateScore,
} from './decisions';
import type { ArchiveRow, HarnessCandidate } from '../activities/types';
import type { HarnessPhase, RunState } from './run-state';
import type { Acts } from './whale-run-activities';
import { logContext } from './run-log';
import { harnessPatienceParams, plannedProposalRounds, stageAt } from './whale-run-plan';
import { SKIP_UNSCORED_ROUNDS_PATCH } from './patches';
import { activitySummary } from './user-metadata';
import { harnessBudgetStop, openEndedHarnessStage } from './budget-protocol';
import { evaluateGridPoints, evaluateOffGrid } from './test-grid';

const INCOMING = 'incoming';

export function startHarnessPhase(state: RunState): void {
  const index = state.phases.filter((p) => p.kind === 'harness').length + 1;
  state.phase = {
    kind: 'harness', index, // The first execution's run id keeps a reused workflow id from mixing its phases into an older run's archive.
    archiveKey: `${state.runId}/${workflowInfo().firstExecutionRunId.slice(0, 8)}/harness-phase-${index}`, nextRound: 0, incoming: state.harness,
    rows: [], accepted: INCOMING, patience: initialHarnessPatience(), failedRounds: 0, lastRule: 'phase started',
  };
}

function scores(phase: HarnessPhase): CandidateScore[] {
  return phase.rows
    .filter((r) => r.status === 'evaluated')
    .map((r, i) => ({
      id: r.name, successRate: r.successRate ?? 0, meanTurns: r.meanTurns ?? 0, meanTokens: r.meanTokens ?? 0,
      incoming: r.name === INCOMING, order: i,
    }));
}

/** Runs one round; returns true when the phase has ended. */
export async function runHarnessRound(state: RunState, phase: HarnessPhase, acts: Acts): Promise<boolean> {
  const round = phase.nextRound;
  if (round === 0) {
    const row = await scoreCandidate(state, phase, acts, {
      name: INCOMING, source: phase.incoming, parent: state.harnessName, hypothesis: 're-score the incoming harness under the current weights', changes: '', axis: 'baseline',
    }, 0);
    phase.rows.push(row);
    phase.nextRound = 1;
    const params = harnessPatienceParams(state.config);
    const planned = plannedProposalRounds(state.config, stageAt(state.config, state.stage) ?? { kind: 'harness', length: 'switching' });
    if (planned === 0) return endHarnessPhase(state, phase, acts, 'fixed schedule: I = 1, round 0 only');
    if (params && planned === null) {
      const early = harnessStopsAfterRound0(row.successRate ?? 0, params);
      if (early.shouldStop) return endHarnessPhase(state, phase, acts, early.rule);
    }
    const budgetStop = harnessBudgetStop(state, phase, stageAt(state.config, state.stage));
    if (budgetStop) return endHarnessPhase(state, phase, acts, budgetStop);
    phase.lastRule = `round 0: incoming success ${row.successRate}`;
    return false;
  }

  const proposed = await acts.proposer.proposeHarnesses({
    runId: state.runId, domain: state.config.domain, seed: state.config.seed, cycle: state.cycle, round,
    count: state.config.harness.candidatesPerRound, promptOnly: state.config.method === 'prompt-only',
    archiveKey: phase.archiveKey, accepted: phase.accepted, proposer: state.config.harness.proposer,
  }, activitySummary.proposeHarnesses(phase.index, round, state.config.harness.candidatesPerRound));
  if (proposed.failure) {
    phase.failedRounds += 1;
    log.warn('proposer failed this round; the phase goes on', { ...logContext(state), round, failure: proposed.failure });
  }
  const candidates = proposed.candidates.map((c, i) => ({ ...c, name: `r${round}-c${i + 1}` }));
  const maxParallel = state.config.harness.maxParallelEvaluations;
  for (let i = 0; i < candidates.length; i += maxParallel) {
    const rows = await Promise.all(candidates.slice(i, i + maxParallel).map((c) => validateAndScore(state, phase, acts, c, round)));
    phase.rows.push(...rows);
  }
  state.proposalRoundsDone += 1;

  const evaluated = scores(phase);
  const { accepted, reason } = selectAccepted(evaluated);
  phase.accepted = accepted.id;
  const bestSuccess = Math.max(...evaluated.map((c) => c.successRate));
  let stopRule: string | null = null;
  const params = harnessPatienceParams(state.config);
  const plan = stageAt(state.config, state.stage);
  // Under protocol 'equal' a last harness stage has no round cap: the budget and the proposer's exhaustion end it.
  const openEnded = openEndedHarnessStage(state, plan);
  const planned = openEnded ? null : plannedProposalRounds(state.config, plan ?? { kind: 'harness', length: 'switching' });
  if (openEnded) {
    phase.lastRule = `round ${round}: ${reason}`;
  } else if (planned !== null) {
    if (round >= planned) stopRule = `${plan?.length === 'budget' ? 'round budget' : 'fixed schedule'}: ${round} proposal rounds done of ${planned}`;
    phase.lastRule = `round ${round}: ${reason}`;
  } else if (params) {
    // A round that scored no candidate (proposer failed, nothing written, all invalid) is counted but not
    // judged, as in the reference release; histories recorded before this rule replay on the old path.
    const scored = phase.rows.some((r) => r.round === round && r.status === 'evaluated');
    const observed = !scored && patched(SKIP_UNSCORED_ROUNDS_PATCH)
      ? skipHarnessRound(phase.patience, bestSuccess, params)
      : observeHarnessRound(phase.patience, bestSuccess, params);
    phase.patience = observed.state;
    phase.lastRule = `round ${round}: ${observed.decision.rule}; ${reason}`;
    if (observed.decision.shouldStop) stopRule = observed.decision.rule;
  }
  phase.nextRound = round + 1;
  if (state.config.method === 'harness-only' || (state.config.method === 'stagewise' && plan?.kind === 'harness')) {
    adoptAccepted(state, phase);
    await evaluateOffGrid(state, acts, `round-${state.proposalRoundsDone}`);
    await evaluateGridPoints(state, acts);
  }
  stopRule ??= harnessBudgetStop(state, phase, plan);
  if (state.control.stop) stopRule = 'stopped on request';
  if (stopRule) return endHarnessPhase(state, phase, acts, stopRule);
  return false;
}

async function validateAndScore(state: RunState, phase: HarnessPhase, acts: Acts, c: HarnessCandidate, round: number): Promise<ArchiveRow> {
  const validation = await acts.proposer.validateHarness({
    runId: state.runId, domain: state.config.domain, archiveKey: phase.archiveKey, name: c.name, source: c.source,
    promptOnlyBase: state.config.method === 'prompt-only' ? state.baseHarness : null,
  }, activitySummary.validateHarness(phase.index, round, c.name));
  state.ledger.search += validation.rollouts;
  if (!validation.valid) {
    return { ...rowBase(c, round), status: 'invalid', successRate: null, meanTurns: null, meanTokens: null, reason: `${validation.failureKind}: ${validation.reason}` };
  }
  try {
    return await scoreCandidate(state, phase, acts, c, round);
  } catch (err) {
    // A candidate that passed validation but cannot be scored (it fails to load on the model worker) is a
    // result for the archive, not the end of the run.
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === 'InvalidHarness') {
      return { ...rowBase(c, round), status: 'invalid', successRate: null, meanTurns: null, meanTokens: null, reason: cause.message };
    }
    throw err;
  }
}

async function scoreCandidate(state: RunState, phase: HarnessPhase, acts: Acts, c: HarnessCandidate, round: number): Promise<ArchiveRow> {
  const result = await acts.model.evaluateHarness({
    runId: state.runId, domain: state.config.domain, seed: state.config.seed, archiveKey: phase.archiveKey, name: c.name,
    harness: c.source, checkpoint: state.checkpoint, rolloutsPerTask: state.config.harness.rolloutsPerTask,
    taskLimit: state.config.harness.taskLimit,
    sampling: { temperature: state.config.harness.temperature, topK: state.config.harness.topK },
  }, activitySummary.evaluateHarness(phase.index, round, c.name));
  state.ledger.search += result.rollouts;
  return { ...rowBase(c, round), status: 'evaluated', successRate: result.successRate, meanTurns: result.meanTurns, meanTokens: result.meanTokens, reason: null };
}

function rowBase(c: HarnessCandidate, round: number) {
  return { round, name: c.name, parent: c.parent, hypothesis: c.hypothesis, changes: c.changes, axis: c.axis, source: c.source };
}

/** Makes the phase's accepted candidate the run's current harness. */
function adoptAccepted(state: RunState, phase: HarnessPhase): void {
  const row = phase.rows.find((r) => r.name === phase.accepted);
  if (!row) return;
  state.harness = row.source;
  if (row.name !== INCOMING) state.harnessName = `${phase.archiveKey.split('/').pop()}/${row.name}`;
}

export async function endHarnessPhase(state: RunState, phase: HarnessPhase, acts: Acts, rule: string): Promise<true> {
  // Grid points this phase spanned are evaluated now, with the harness it started with (WHALE adopts at the end).
  await evaluateGridPoints(state, acts);
  adoptAccepted(state, phase);
  const frontier = paretoFrontier(scores(phase)).map((c) => c.id);
  await acts.proposer.finalizeHarnessPhase({ runId: state.runId, archiveKey: phase.archiveKey, rows: phase.rows, accepted: phase.accepted, frontier }, activitySummary.finalizeHarnessPhase(phase.index, phase.accepted));
  const acceptedRow = phase.rows.find((r) => r.name === phase.accepted);
  phase.lastRule = rule;
  state.phases.push({
    kind: 'harness', index: phase.index, cycle: state.cycle, startStep: state.weightStepsDone, endStep: state.weightStepsDone,
    proposalRounds: phase.nextRound - 1, rule, acceptedHarness: state.harnessName, acceptedSuccess: acceptedRow?.successRate ?? null,
  });
  const evaluatedEachRound = state.config.method === 'harness-only' || state.config.method === 'stagewise';
  if (!evaluatedEachRound) await evaluateOffGrid(state, acts, `harness-phase-${phase.index}-end`);
  log.info('harness phase ended', { ...logContext(state), index: phase.index, accepted: phase.accepted, rule });
  return true;
}
