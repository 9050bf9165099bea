// Test doubles for the run workflow's activities: they return scripted signals and scores, log every call,
// and fail the run loudly (non-retryable) on any call the script does not expect. `assertFullyUsed` fails a
// test whose script had entries the run never asked for.
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { ArtifactRef } from '../../store/artifact-ref';
import type { WhaleActivities } from '../../activities/types';

export function fakeRef(kind: ArtifactRef['kind'], label: string): ArtifactRef {
  const sha256 = createHash('sha256').update(label).digest('hex');
  return { kind, uri: `cas://sha256/${sha256}`, sha256, bytes: label.length };
}

export interface Script {
  splitSizes: { weight: number; harness: number; test: number };
  /** Mean training reward of each global weight step (1-based index = step); null = missing signal. */
  rewards: (number | null)[];
  /** Test mean@8 per evaluation call, in call order. */
  testScores: number[];
  /** Candidate scores keyed by `${archiveKey-suffix}/${name}`, e.g. "harness-phase-1/incoming". */
  candidateScores: Record<string, { successRate: number; meanTurns: number }>;
  /** Candidate names the validator rejects. */
  invalid?: string[];
  /** Candidates that pass validation but fail to load on the model worker (InvalidHarness). */
  unloadable?: string[];
  /** Proposal rounds (by `${phase}/r${round}`) whose proposer fails with nothing written. */
  proposerFails?: string[];
  /** Operations tests re-run history (reset): scripted lists then repeat their last entry instead of failing. */
  lenient?: boolean;
  /** Called before each rollout batch returns: lets a test hold a step (await a gate) or observe it. */
  onRolloutBatch?: (step: number) => Promise<void>;
}

export interface CallRecord {
  activity: keyof WhaleActivities;
  detail: string;
}

function unexpected(what: string): never {
  throw ApplicationFailure.nonRetryable(`UNEXPECTED CALL: ${what}`, 'UnexpectedCall');
}

export function scriptedActivities(script: Script) {
  const calls: CallRecord[] = [];
  const usedCandidates = new Set<string>();
  let testCalls = 0;
  const phaseOf = (archiveKey: string) => archiveKey.split('/').pop() ?? archiveKey;

  const activities: WhaleActivities = {
    async prepareRun(input) {
      calls.push({ activity: 'prepareRun', detail: input.domain });
      return { checkpoint: fakeRef('checkpoint', 'base'), harness: fakeRef('harness', 'h0'), splitSizes: script.splitSizes };
    },
    async rolloutBatch(input) {
      calls.push({ activity: 'rolloutBatch', detail: `step ${input.step} cursor ${input.cursor.epoch}:${input.cursor.offset}` });
      if (input.step < 1 || (input.step > script.rewards.length && !script.lenient)) unexpected(`rolloutBatch for step ${input.step}; the script has ${script.rewards.length} steps`);
      await script.onRolloutBatch?.(input.step);
      const reward = script.rewards[Math.min(input.step, script.rewards.length) - 1];
      const rollouts = input.prompts * input.samplesPerPrompt;
      return {
        trajectories: fakeRef('trajectories', `traj-${input.step}`), promptIds: [], rollouts, scored: reward === null ? 0 : rollouts,
        meanReward: reward, accepted: reward === null ? 0 : Math.round(reward * rollouts), distinctAcceptedPrompts: 0, tokens: 0, meanTurns: 1,
      };
    },
    async fineTuneStep(input) {
      calls.push({ activity: 'fineTuneStep', detail: `step ${input.step}` });
      return { checkpoint: fakeRef('checkpoint', `${input.checkpoint.sha256}+${input.step}`), updated: true, acceptedTrajectories: 1, acceptedTokens: 1, minibatches: 1, meanLoss: 1, resumedFromMinibatch: 0 };
    },
    async evaluateTest(input) {
      calls.push({ activity: 'evaluateTest', detail: input.label });
      if (testCalls >= script.testScores.length && !script.lenient) unexpected(`evaluateTest #${testCalls + 1} (${input.label}); the script has ${script.testScores.length}`);
      const meanAt8 = script.testScores[Math.min(testCalls++, script.testScores.length - 1)];
      return { meanAt8, tasks: 4, rollouts: 4 * input.samplesPerTask, detail: fakeRef('evaluation', `${input.label}`) };
    },
    async proposeHarnesses(input) {
      const key = `${phaseOf(input.archiveKey)}/r${input.round}`;
      calls.push({ activity: 'proposeHarnesses', detail: key });
      if (script.proposerFails?.includes(key)) return { candidates: [], failure: 'proposer wrote nothing', cost: { tokens: null, usd: null, wallMs: 1 } };
      const candidates = Array.from({ length: input.count }, (_, i) => ({
        name: `p${i}`, source: fakeRef('harness', `${key}/c${i + 1}`), parent: input.accepted, hypothesis: 'h', changes: 'c', axis: 'a',
      }));
      return { candidates, failure: null, cost: { tokens: null, usd: null, wallMs: 1 } };
    },
    async validateHarness(input) {
      calls.push({ activity: 'validateHarness', detail: `${phaseOf(input.archiveKey)}/${input.name}` });
      const bad = script.invalid?.includes(`${phaseOf(input.archiveKey)}/${input.name}`);
      return { valid: !bad, failureKind: bad ? 'compile-error' : null, reason: bad ? 'scripted invalid' : null, rollouts: 2 };
    },
    async evaluateHarness(input) {
      const key = `${phaseOf(input.archiveKey)}/${input.name}`;
      calls.push({ activity: 'evaluateHarness', detail: key });
      if (script.unloadable?.includes(key)) throw ApplicationFailure.nonRetryable(`harness ${key} does not load: runtime-error: boom`, 'InvalidHarness');
      const s = script.candidateScores[key] ?? (script.lenient ? { successRate: 0.5, meanTurns: 2 } : undefined);
      if (!s) unexpected(`evaluateHarness ${key}: no score scripted`);
      usedCandidates.add(key);
      return { successRate: s.successRate, meanTurns: s.meanTurns, meanTokens: 10, rollouts: script.splitSizes.harness, trajectories: fakeRef('trajectories', key) };
    },
    async finalizeHarnessPhase(input) {
      calls.push({ activity: 'finalizeHarnessPhase', detail: `${phaseOf(input.archiveKey)} accepted ${input.accepted}` });
      return { archive: fakeRef('archive', input.archiveKey) };
    },
  };

  function assertFullyUsed(): void {
    const unusedScores = Object.keys(script.candidateScores).filter((k) => !usedCandidates.has(k));
    const problems: string[] = [];
    if (unusedScores.length) problems.push(`scripted candidate scores never asked for: ${unusedScores.join(', ')}`);
    if (testCalls !== script.testScores.length) problems.push(`${script.testScores.length - testCalls} scripted test scores never asked for`);
    const steps = calls.filter((c) => c.activity === 'rolloutBatch').length;
    if (steps !== script.rewards.length) problems.push(`${script.rewards.length - steps} scripted weight steps never ran`);
    if (problems.length) throw new Error(`UNUSED SCRIPT: ${problems.join('; ')}`);
  }

  return { activities, calls, assertFullyUsed };
}

/** A gate a scripted activity awaits (`wait()`) until the test opens it; `reached` resolves once it waits. */
export function gate(): { wait: () => Promise<void>; open: () => void; reached: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let reach!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  return { wait: async () => (reach(), opened), open, reached };
}
