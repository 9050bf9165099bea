// The one durable state object of a WHALE run: versioned, zod-validated, carried through continue-as-new.
// It holds references and small summaries only. A change to its shape bumps STATE_VERSION and keeps the
// old version's recorded histories in tests/histories/ (they guard the upgrade path).
import { z } from 'zod';
import { ArtifactRef } from '../store/artifact-ref';
import { RunConfigV1 } from './run-config';

export const STATE_VERSION = 1;

const NullableNumber = z.number().nullable();

const WeightPatienceStateSchema = z.object({
  window: z.array(z.number()),
  best: NullableNumber,
  stepsInPhase: z.number().int(),
  lastBestStep: z.number().int(),
  signalsSeen: z.number().int(),
});
const HarnessPatienceStateSchema = z.object({
  proposalRounds: z.number().int(),
  best: NullableNumber,
  roundsSinceBest: z.number().int(),
});

export const ArchiveRowSchema = z.object({
  round: z.number().int(),
  name: z.string(),
  parent: z.string(),
  status: z.enum(['evaluated', 'invalid']),
  successRate: NullableNumber,
  meanTurns: NullableNumber,
  meanTokens: NullableNumber,
  hypothesis: z.string(),
  changes: z.string(),
  axis: z.string(),
  reason: z.string().nullable(),
  source: ArtifactRef,
});

export const WeightPhaseSchema = z.object({
  kind: z.literal('weight'),
  index: z.number().int(),
  startStep: z.number().int(),
  stepsInPhase: z.number().int(),
  /** Patience state; null while the policy is fixed (it starts fresh if the policy changes mid-phase). */
  patience: WeightPatienceStateSchema.nullable(),
  lastRule: z.string(),
});

export const HarnessPhaseSchema = z.object({
  kind: z.literal('harness'),
  index: z.number().int(),
  archiveKey: z.string(),
  /** The next round to run: 0 re-scores the incoming harness; proposal rounds are 1, 2, ... */
  nextRound: z.number().int(),
  incoming: ArtifactRef,
  rows: z.array(ArchiveRowSchema),
  accepted: z.string(),
  patience: HarnessPatienceStateSchema,
  failedRounds: z.number().int(),
  lastRule: z.string(),
});

export const PhaseSchema = z.discriminatedUnion('kind', [
  WeightPhaseSchema,
  HarnessPhaseSchema,
  z.object({ kind: z.literal('final') }),
  z.object({ kind: z.literal('done') }),
]);
export type Phase = z.infer<typeof PhaseSchema>;
export type WeightPhase = z.infer<typeof WeightPhaseSchema>;
export type HarnessPhase = z.infer<typeof HarnessPhaseSchema>;

/** A finished phase, as the audit report shows it. */
export const PhaseRecordSchema = z.object({
  kind: z.enum(['weight', 'harness']),
  index: z.number().int(),
  cycle: z.number().int(),
  startStep: z.number().int(),
  endStep: z.number().int(),
  proposalRounds: z.number().int(),
  rule: z.string(),
  acceptedHarness: z.string().nullable(),
  acceptedSuccess: NullableNumber,
});
export type PhaseRecord = z.infer<typeof PhaseRecordSchema>;

export const TestEvalSchema = z.object({
  atWeightStep: z.number().int(),
  atRollouts: z.number().int(),
  meanAt8: z.number(),
  label: z.string(),
  /** test.everyRollouts: the grid point this evaluation stands for (atRollouts is the exact count, >= it). Optional, so states carried before it parse. */
  gridPoint: z.number().int().optional(),
});

export const RunStateSchema = z.object({
  stateVersion: z.literal(STATE_VERSION),
  runId: z.string(),
  config: RunConfigV1,
  splitSizes: z.object({ weight: z.number().int(), harness: z.number().int(), test: z.number().int() }),
  stepsPerEpoch: z.number().int().positive(),
  testEverySteps: z.number().int().positive(),
  baseCheckpoint: ArtifactRef,
  baseHarness: ArtifactRef,
  checkpoint: ArtifactRef,
  harness: ArtifactRef,
  harnessName: z.string(),
  cycle: z.number().int(),
  /** Position of the method's plan: which stage of the method's phase sequence runs now. */
  stage: z.number().int(),
  phase: PhaseSchema,
  weightStepsDone: z.number().int(),
  proposalRoundsDone: z.number().int(),
  cursor: z.object({ epoch: z.number().int(), offset: z.number().int() }),
  ledger: z.object({ training: z.number().int(), search: z.number().int(), test: z.number().int() }),
  tests: z.object({
    evaluations: z.array(TestEvalSchema),
    best: NullableNumber,
    final: NullableNumber,
  }),
  initialMeanAt8: NullableNumber,
  lastEvalKey: z.string().nullable(),
  lastTrainReward: NullableNumber,
  phases: z.array(PhaseRecordSchema),
  control: z.object({
    paused: z.boolean(),
    stop: z.enum(['finish-step', 'abandon-step']).nullable(),
  }),
  policyChanges: z.array(z.object({ atWeightStep: z.number().int(), switching: z.unknown() })),
  continuedAsNew: z.number().int(),
});
export type RunState = z.infer<typeof RunStateSchema>;

/** What the run returns when it completes. */
export interface RunSummary {
  runId: string;
  method: string;
  domain: string;
  weightStepsDone: number;
  proposalRoundsDone: number;
  initialMeanAt8: number | null;
  bestMeanAt8: number | null;
  finalMeanAt8: number | null;
  ledger: RunState['ledger'];
  finalCheckpoint: z.infer<typeof ArtifactRef>;
  finalHarness: z.infer<typeof ArtifactRef>;
  finalHarnessName: string;
  phases: PhaseRecord[];
  stoppedEarly: boolean;
  continuedAsNew: number;
  /** test.everyRollouts: the grid's evaluations (grid point, exact rollouts, mean@8); absent without a grid. */
  gridEvaluations?: { gridPoint: number; atRollouts: number; atWeightStep: number; meanAt8: number }[];
  /**
   * Every test evaluation in order, including those that reused the previous score for an unchanged
   * (checkpoint, harness) pair and so left no activity in the history; absent in runs closed before it.
   */
  testEvaluations?: RunState['tests']['evaluations'];
  /** The comparison protocol and what the run spent of its budget (unspentRollouts: null without maxRollouts). */
  budget?: {
    protocol: 'none' | 'equal' | 'paper';
    maxRollouts: number | null;
    totalWeightSteps: number;
    spentRollouts: number;
    unspentRollouts: number | null;
    withinBudget: boolean | null;
  };
}
