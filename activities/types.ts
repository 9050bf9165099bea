// The activity contracts the run workflow calls: inputs and results carry artifact references and small
// summaries, never blobs (payloads stay far below Temporal's 512 KiB warning). Types only: workflows
// import this file with `import type`.
import type { ArtifactRef } from '../store/artifact-ref';

/**
 * Where the run stood when it scheduled an activity; the workflow adds it to every activity input so each
 * worker log line carries run id, phase, cycle and step.
 */
export interface LogContext {
  runId: string;
  phase: string;
  cycle: number;
  step: number;
}

/** Position of the persistent prompt sampler over D_weight: epoch e visits a seeded permutation. */
export interface SamplerCursor {
  epoch: number;
  offset: number;
}

export interface PrepareRunInput {
  runId: string;
  /** The fully expanded run config, recorded here so the history alone tells what ran (audits read it). */
  config?: unknown;
  domain: string;
  seed: number;
  modelPreset: string;
  baseCheckpoint: ArtifactRef | null;
  baseHarness: ArtifactRef | null;
}
export interface PrepareRunResult {
  checkpoint: ArtifactRef;
  harness: ArtifactRef;
  splitSizes: { weight: number; harness: number; test: number };
}

export interface SamplingOptions {
  temperature: number;
  topK: number;
}

export interface RolloutBatchInput {
  runId: string;
  domain: string;
  /** Global weight step this batch belongs to (1-based). */
  step: number;
  seed: number;
  checkpoint: ArtifactRef;
  harness: ArtifactRef;
  cursor: SamplerCursor;
  prompts: number;
  samplesPerPrompt: number;
  sampling: SamplingOptions;
  acceptThreshold: number;
  /** weight.taskLimit: sample from a subset of this many D_weight prompts chosen by the seed; absent: all of D_weight. */
  taskLimit?: number;
}
export interface RolloutBatchResult {
  trajectories: ArtifactRef;
  /** Ids of the D_weight prompts this step used, in order (history alone tells what was trained on). */
  promptIds: string[];
  rollouts: number;
  /** Rollouts that ran to a verdict; 0 means the signal is missing. */
  scored: number;
  /** Mean reward over all rollouts, harness failures counting 0 (the weight-patience signal); null when nothing was scored. */
  meanReward: number | null;
  accepted: number;
  distinctAcceptedPrompts: number;
  tokens: number;
  meanTurns: number;
}

export interface FineTuneStepInput {
  runId: string;
  step: number;
  seed: number;
  checkpoint: ArtifactRef;
  trajectories: ArtifactRef;
  acceptThreshold: number;
  learningRate: number;
  minibatchSize: number;
  /** What minibatchSize counts; absent: 'calls' (left out then, so recorded steps keep their input key). */
  minibatchUnit?: 'trajectories';
  weightDecay: number;
  clipNorm: number;
  deterministic: boolean;
}
export interface FineTuneStepResult {
  checkpoint: ArtifactRef;
  updated: boolean;
  acceptedTrajectories: number;
  acceptedTokens: number;
  minibatches: number;
  meanLoss: number | null;
  /** Minibatches skipped because a previous attempt had already done them (resume from heartbeat). */
  resumedFromMinibatch: number;
  /** Model calls of the accepted trajectories that were trained / not trained (absent in older histories). */
  keptCalls?: number;
  droppedCalls?: number;
}

export interface EvaluateTestInput {
  runId: string;
  domain: string;
  seed: number;
  label: string;
  checkpoint: ArtifactRef;
  harness: ArtifactRef;
  samplesPerTask: number;
  taskLimit: number | null;
}
export interface EvaluateTestResult {
  meanAt8: number;
  tasks: number;
  rollouts: number;
  detail: ArtifactRef;
}

export interface HarnessCandidate {
  name: string;
  source: ArtifactRef;
  parent: string;
  hypothesis: string;
  changes: string;
  axis: string;
}

export interface ProposeHarnessesInput {
  runId: string;
  domain: string;
  seed: number;
  cycle: number;
  round: number;
  count: number;
  promptOnly: boolean;
  /** The phase archive folder key (the proposer reads candidates, scores and D_harness traces there). */
  archiveKey: string;
  accepted: string;
  proposer: { kind: string; [k: string]: unknown };
}
export interface ProposeHarnessesResult {
  candidates: HarnessCandidate[];
  /** Set when the proposer failed as a whole (timeout, wrote nothing): the round is logged as failed. */
  failure: string | null;
  cost: { tokens: number | null; usd: number | null; wallMs: number };
}

export interface ValidateHarnessInput {
  runId: string;
  domain: string;
  archiveKey: string;
  name: string;
  source: ArtifactRef;
  /** Prompt-only search: only the two prompt strings of this harness may differ. */
  promptOnlyBase: ArtifactRef | null;
}
export interface ValidateHarnessResult {
  valid: boolean;
  /** Typed failure (compile-error, contract-violation, timeout, memory-limit, runtime-error, ...). */
  failureKind: string | null;
  reason: string | null;
  /** Rollouts spent on the smoke run (search ledger). */
  rollouts: number;
}

export interface EvaluateHarnessInput {
  runId: string;
  domain: string;
  seed: number;
  archiveKey: string;
  name: string;
  harness: ArtifactRef;
  checkpoint: ArtifactRef;
  rolloutsPerTask: number;
  taskLimit: number | null;
  /** From the run config (harness.temperature, harness.topK); absent in inputs scheduled before it had them. */
  sampling?: SamplingOptions;
}
export interface EvaluateHarnessResult {
  successRate: number;
  meanTurns: number;
  meanTokens: number;
  rollouts: number;
  trajectories: ArtifactRef;
}

export interface ArchiveRow {
  round: number;
  name: string;
  parent: string;
  status: 'evaluated' | 'invalid';
  successRate: number | null;
  meanTurns: number | null;
  meanTokens: number | null;
  hypothesis: string;
  changes: string;
  axis: string;
  reason: string | null;
  source: ArtifactRef;
}
export interface FinalizeHarnessPhaseInput {
  runId: string;
  archiveKey: string;
  rows: ArchiveRow[];
  accepted: string;
  frontier: string[];
}

/** Every activity the run workflow schedules. */
export interface WhaleActivities {
  prepareRun(input: PrepareRunInput): Promise<PrepareRunResult>;
  rolloutBatch(input: RolloutBatchInput): Promise<RolloutBatchResult>;
  fineTuneStep(input: FineTuneStepInput): Promise<FineTuneStepResult>;
  evaluateTest(input: EvaluateTestInput): Promise<EvaluateTestResult>;
  proposeHarnesses(input: ProposeHarnessesInput): Promise<ProposeHarnessesResult>;
  validateHarness(input: ValidateHarnessInput): Promise<ValidateHarnessResult>;
  evaluateHarness(input: EvaluateHarnessInput): Promise<EvaluateHarnessResult>;
  finalizeHarnessPhase(input: FinalizeHarnessPhaseInput): Promise<{ archive: ArtifactRef }>;
}
