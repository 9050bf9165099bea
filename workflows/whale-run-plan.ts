// What each method runs, as a sequence of stages, and how long each phase lasts under the current
// switching policy. Pure functions of the run state (workflow-safe, no Temporal calls).
import { epochsToSteps, fixedProposalRounds } from './decisions';
import type { RunConfig } from './run-config';

export type StageKind = 'weight' | 'harness';

/** Weight phases that run for the whole remaining budget, and harness phases budgeted in rounds. */
export interface StagePlan {
  kind: StageKind;
  /** 'budget': the weight budget / harness-only rounds bound the phase; 'switching': the policy does. */
  length: 'budget' | 'switching';
}

/** The stage at position `stage` of the method's plan, or null when the plan is complete. */
export function stageAt(config: RunConfig, stage: number): StagePlan | null {
  switch (config.method) {
    case 'weights-only':
      return stage === 0 ? { kind: 'weight', length: 'budget' } : null;
    case 'harness-only':
      return stage === 0 ? { kind: 'harness', length: 'budget' } : null;
    case 'stagewise': {
      const order: StageKind[] = config.stagewiseOrder === 'weights-first' ? ['weight', 'harness'] : ['harness', 'weight'];
      return stage < 2 ? { kind: order[stage], length: 'budget' } : null;
    }
    case 'whale-fixed':
    case 'whale-adaptive':
    case 'prompt-only':
      // weight, harness, weight, harness, ...: the budget check ends the run after a weight phase.
      return { kind: stage % 2 === 0 ? 'weight' : 'harness', length: 'switching' };
  }
}

/** Steps of a fixed-schedule weight phase (E epochs, rounded, at least 1). */
export function fixedWeightPhaseSteps(config: RunConfig, stepsPerEpoch: number): number | null {
  return config.switching.kind === 'fixed' ? epochsToSteps(config.switching.weightEpochs, stepsPerEpoch) : null;
}

/** Proposal rounds of a harness phase with a fixed length, or null when patience decides. */
export function plannedProposalRounds(config: RunConfig, plan: StagePlan): number | null {
  if (plan.length === 'budget') return config.budget.harnessOnlyProposalRounds;
  return config.switching.kind === 'fixed' ? fixedProposalRounds(config.switching.harnessRounds) : null;
}

/** Converts the patience policy's epochs into steps for this run's D_weight. */
export function weightPatienceParams(config: RunConfig, stepsPerEpoch: number) {
  if (config.switching.kind !== 'patience') return null;
  const s = config.switching;
  return {
    windowSteps: epochsToSteps(s.windowEpochs, stepsPerEpoch),
    burnInSteps: epochsToSteps(s.burnInEpochs, stepsPerEpoch),
    patienceSteps: epochsToSteps(s.patienceEpochs, stepsPerEpoch),
  };
}

export function harnessPatienceParams(config: RunConfig) {
  if (config.switching.kind !== 'patience') return null;
  const s = config.switching;
  return {
    minProposalRounds: s.harnessMinProposalRounds,
    patienceRounds: s.harnessPatienceRounds,
    maxProposalRounds: s.harnessMaxProposalRounds,
    stopAtScore: s.harnessStopAtScore,
  };
}

/** Advances the persistent sampler: offset moves by the prompts used, wrapping into the next epoch. */
export function advanceCursor(cursor: { epoch: number; offset: number }, used: number, datasetSize: number) {
  let { epoch, offset } = cursor;
  offset += used;
  while (offset >= datasetSize) {
    offset -= datasetSize;
    epoch += 1;
  }
  return { epoch, offset };
}
