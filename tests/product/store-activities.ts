// Scripted run activities that really write to a directory artifact store and harness archives, so that
// retention can be tested against the runs of a real server: every put is recorded with the run and a
// label, and a test can hold an activity part-way (after it has written, before it returns).
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import type { ArtifactKind, ArtifactRef } from '../../store/artifact-ref';
import { openArchive, recordCandidateEvaluation } from '../../activities/archive';
import type { WhaleActivities } from '../../activities/types';

export interface PutRecord { runId: string; label: string; sha256: string; bytes: number }

/** Where an activity can be held: `${runId}/${activity}/${step}`. */
export type HoldPoint = string;

export function storeActivities(root: string, opts: { hold?: (point: HoldPoint) => Promise<void> } = {}) {
  const store = new DirectoryArtifactStore(root);
  const puts: PutRecord[] = [];
  const put = async (runId: string, label: string, kind: ArtifactKind, data: string): Promise<ArtifactRef> => {
    const ref = await store.put(kind, data);
    puts.push({ runId, label, sha256: ref.sha256, bytes: ref.bytes });
    return ref;
  };
  // A held activity keeps heartbeating, so a slow test machine never times it out while it waits.
  const hold = async (point: HoldPoint, details: unknown = { held: point }) => {
    const beat = setInterval(() => Context.current().heartbeat(details), 2_000);
    try {
      await opts.hold?.(point);
    } finally {
      clearInterval(beat);
    }
  };

  const activities: WhaleActivities = {
    async prepareRun(input) {
      // Equal bytes for every run: the store keeps one object that several runs share.
      const checkpoint = await put(input.runId, 'shared', 'checkpoint', 'BASE CHECKPOINT');
      const harness = await put(input.runId, 'shared', 'harness', 'H0 HARNESS');
      return { checkpoint, harness, splitSizes: { weight: 20, harness: 4, test: 4 } };
    },
    async rolloutBatch(input) {
      await store.get(input.checkpoint);
      await store.get(input.harness);
      const trajectories = await put(input.runId, `trajectories ${input.step}`, 'trajectories', `${input.runId} trajectories step ${input.step}`);
      await hold(`${input.runId}/rolloutBatch/${input.step}`);
      return { trajectories, promptIds: [], rollouts: 20, scored: 20, meanReward: 0.1 * input.step, accepted: 2, distinctAcceptedPrompts: 2, tokens: 100, meanTurns: 1 };
    },
    async fineTuneStep(input) {
      await store.get(input.trajectories);
      await store.get(input.checkpoint);
      // A partial checkpoint announced by heartbeat, and one the step is writing that nothing mentions yet.
      const partial = await put(input.runId, `partial ${input.step}`, 'checkpoint', `${input.runId} partial ${input.step}`);
      const beat = { kind: 'fine-tune', minibatch: 1, partial };
      Context.current().heartbeat(beat);
      await put(input.runId, `in-flight ${input.step}`, 'checkpoint', `${input.runId} in flight ${input.step}`);
      await hold(`${input.runId}/fineTuneStep/${input.step}`, beat);
      const checkpoint = await put(input.runId, `checkpoint ${input.step}`, 'checkpoint', `${input.runId} checkpoint ${input.step}`);
      const result = { checkpoint, updated: true, acceptedTrajectories: 2, acceptedTokens: 10, minibatches: 1, meanLoss: 1, resumedFromMinibatch: 0 };
      // The idempotency binding the real step writes (its blob mentions the new checkpoint).
      const blob = await put(input.runId, 'fine-tune result', 'blob', JSON.stringify(result));
      await store.bindName(`fine-tune/${createHash('sha256').update(`${input.runId}/${input.step}`).digest('hex')}`, blob);
      return result;
    },
    async evaluateTest(input) {
      await store.get(input.checkpoint);
      await store.get(input.harness);
      const detail = await put(input.runId, `test ${input.label}`, 'evaluation', JSON.stringify({ label: input.label, runId: input.runId, checkpoint: input.checkpoint.sha256 }));
      return { meanAt8: 0.25, tasks: 4, rollouts: 4 * input.samplesPerTask, detail };
    },
    async proposeHarnesses(input) {
      const candidates = [];
      for (let i = 1; i <= input.count; i++) {
        const source = await put(input.runId, `candidate r${input.round}-c${i}`, 'harness', `${input.runId} candidate r${input.round}-c${i}`);
        candidates.push({ name: `r${input.round}-c${i}`, source, parent: input.accepted, hypothesis: 'h', changes: 'c', axis: 'a' });
      }
      await openArchive(root, input.archiveKey).writeRoundFile(input.round, 'pending_eval.json', JSON.stringify(candidates));
      return { candidates, failure: null, cost: { tokens: null, usd: null, wallMs: 1 } };
    },
    async validateHarness(input) {
      await store.get(input.source);
      await openArchive(root, input.archiveKey).writeValidation(input.name, { valid: true, failureKind: null, reason: null, violations: [], smoke: 'ok' });
      return { valid: true, failureKind: null, reason: null, rollouts: 2 };
    },
    async evaluateHarness(input) {
      const source = (await store.get(input.harness)).toString('utf8');
      await store.get(input.checkpoint);
      const jsonl = `{"runId":"${input.runId}","candidate":"${input.name}"}\n`;
      const trajectories = await put(input.runId, `harness traces ${input.name}`, 'trajectories', jsonl);
      const score = { successRate: input.name === 'incoming' ? 0.2 : 0.4, meanTurns: 2, meanTokens: 10, rollouts: 4 };
      await recordCandidateEvaluation(openArchive(root, input.archiveKey), input.name, { ...score, trajectoriesJsonl: jsonl, source });
      return { ...score, trajectories };
    },
    async finalizeHarnessPhase(input) {
      const { manifest } = await openArchive(root, input.archiveKey).finalize(input);
      return { archive: await put(input.runId, 'archive manifest', 'archive', manifest) };
    },
  };
  return { store, activities, puts };
}
