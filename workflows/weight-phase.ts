// One weight step of a weight phase (online RSFT): rollouts from the persistent sampler under the current
// harness, one fine-tune step on the accepted trajectories, the patience signal, periodic test evaluation,
// and the end-of-phase decision under the current switching policy.
import { log, patched } from '@temporalio/workflow';
import { initialWeightPatience, observeWeightStep, runBudgetReached, testEvalDue } from './decisions';
import type { RunState, WeightPhase } from './run-state';
import type { Acts } from './whale-run-activities';
import { logContext } from './run-log';
import { advanceCursor, fixedWeightPhaseSteps, stageAt, weightPatienceParams } from './whale-run-plan';
import { currentPairEvaluated } from './test-eval';
import { TEST_AT_ADAPTIVE_STOP_PATCH } from './patches';
import { activitySummary } from './user-metadata';
import { harnessSwitchGate, weightBudgetSpent } from './budget-protocol';
import { evaluateGridPoints, evaluateOffGrid } from './test-grid';

export function startWeightPhase(state: RunState): void {
  const index = state.phases.filter((p) => p.kind === 'weight').length + 1;
  state.phase = {
    kind: 'weight', index, startStep: state.weightStepsDone, stepsInPhase: 0,
    patience: state.config.switching.kind === 'patience' ? initialWeightPatience() : null, lastRule: 'phase started',
  };
}

function budgetReached(state: RunState): boolean {
  return runBudgetReached(state.weightStepsDone, state.config.budget.totalWeightSteps, state.ledger, state.config.budget.maxRollouts)
    || weightBudgetSpent(state);
}

/**
 * Under protocol 'equal' a switch that the rest of the budget cannot pay for (the harness phase at its cap and
 * a weight step after it) is refused: the weight phase goes on and the rule says why. True: switch.
 */
function switchAffordable(state: RunState, phase: WeightPhase, rule: string): boolean {
  const gate = harnessSwitchGate(state);
  if (gate && !gate.allowed) phase.lastRule = `${rule}; ${gate.rule}: the weight phase goes on`;
  return gate === null || gate.allowed;
}

/** Runs one step; returns true when the phase has ended (its record is appended to state.phases). */
export async function runWeightStep(state: RunState, phase: WeightPhase, acts: Acts): Promise<boolean> {
  const config = state.config;
  if (budgetReached(state)) return endWeightPhase(state, phase, `budget reached before step ${state.weightStepsDone + 1}`);
  const step = state.weightStepsDone + 1;
  const rollouts = await acts.model.rolloutBatch({
    runId: state.runId, domain: config.domain, step, seed: config.seed,
    checkpoint: state.checkpoint, harness: state.harness, cursor: state.cursor,
    prompts: config.weight.promptsPerStep, samplesPerPrompt: config.weight.samplesPerPrompt,
    sampling: { temperature: config.weight.temperature, topK: config.weight.topK },
    acceptThreshold: config.weight.acceptThreshold,
    // Only when set: a full-D_weight batch keeps the exact input it had before the field existed.
    ...(config.weight.taskLimit !== null ? { taskLimit: config.weight.taskLimit } : {}),
  }, activitySummary.rolloutBatch(step, config.weight.promptsPerStep * config.weight.samplesPerPrompt));
  state.ledger.training += rollouts.rollouts;
  state.cursor = advanceCursor(state.cursor, config.weight.promptsPerStep, state.splitSizes.weight);
  const tuned = await acts.model.fineTuneStep({
    runId: state.runId, step, seed: config.seed, checkpoint: state.checkpoint, trajectories: rollouts.trajectories,
    acceptThreshold: config.weight.acceptThreshold, learningRate: config.weight.learningRate,
    minibatchSize: config.weight.minibatchSize, weightDecay: config.weight.weightDecay,
    // Only when set: a 'calls' step keeps the exact input (and idempotency key) it had before the field existed.
    ...(config.weight.minibatchUnit === 'trajectories' ? { minibatchUnit: 'trajectories' as const } : {}),
    clipNorm: config.weight.clipNorm, deterministic: config.weight.deterministic,
  }, activitySummary.fineTuneStep(step));
  state.checkpoint = tuned.checkpoint;
  state.weightStepsDone = step;
  phase.stepsInPhase += 1;
  state.lastTrainReward = rollouts.meanReward;

  let switchRule: string | null = null;
  const params = weightPatienceParams(config, state.stepsPerEpoch);
  if (params) {
    const observed = observeWeightStep(phase.patience ?? initialWeightPatience(), rollouts.meanReward, params);
    phase.patience = observed.state;
    phase.lastRule = `step ${step}: ${observed.decision.rule}`;
    if (observed.decision.shouldSwitch && stageAt(config, state.stage)?.length === 'switching') switchRule = observed.decision.rule;
  } else {
    phase.lastRule = `step ${step}: reward ${rollouts.meanReward ?? 'missing'}, accepted ${rollouts.accepted}/${rollouts.rollouts}`;
  }
  log.info('weight step', { ...logContext(state), step, meanReward: rollouts.meanReward, accepted: rollouts.accepted, updated: tuned.updated });

  if (testEvalDue(state.weightStepsDone, state.testEverySteps)) {
    await evaluateOffGrid(state, acts, `step-${step}`);
  }
  await evaluateGridPoints(state, acts);
  if (budgetReached(state)) return endWeightPhase(state, phase, `budget reached: ${state.weightStepsDone}/${config.budget.totalWeightSteps} weight steps, ${state.ledger.training + state.ledger.search} rollouts`);
  if (state.control.stop) return endWeightPhase(state, phase, 'stopped on request');
  if (switchRule && switchAffordable(state, phase, switchRule)) {
    // The reference's trainer validates at the last step of every weight phase; an adaptive stop can fall
    // between cadence steps, so the pair it hands to the harness phase is evaluated (runs recorded before
    // this rule replay without it).
    if (!currentPairEvaluated(state) && patched(TEST_AT_ADAPTIVE_STOP_PATCH)) {
      await evaluateOffGrid(state, acts, `weight-phase-${phase.index}-end`);
    }
    return endWeightPhase(state, phase, switchRule);
  }
  const fixedSteps = fixedWeightPhaseSteps(config, state.stepsPerEpoch);
  if (fixedSteps !== null && stageAt(config, state.stage)?.length === 'switching' && phase.stepsInPhase >= fixedSteps) {
    const rule = `fixed schedule: ${phase.stepsInPhase} steps = E ${config.switching.kind === 'fixed' ? config.switching.weightEpochs : '?'} epochs x ${state.stepsPerEpoch} steps/epoch`;
    if (switchAffordable(state, phase, rule)) return endWeightPhase(state, phase, rule);
  }
  return false;
}

export function endWeightPhase(state: RunState, phase: WeightPhase, rule: string): true {
  phase.lastRule = rule;
  state.phases.push({
    kind: 'weight', index: phase.index, cycle: state.cycle, startStep: phase.startStep, endStep: state.weightStepsDone,
    proposalRounds: 0, rule, acceptedHarness: null, acceptedSuccess: null,
  });
  log.info('weight phase ended', { ...logContext(state), index: phase.index, endStep: state.weightStepsDone, rule });
  return true;
}
