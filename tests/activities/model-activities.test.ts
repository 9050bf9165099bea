// The model activities on small real parts: a 'tiny' onnxruntime model, the math domain, the real sandbox
// and a directory store. Rollouts, fine-tune steps (idempotent, resumable, deterministic) and test evaluation.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { SandboxPool } from '../../harness-sandbox/pool';
import { getDomain } from '../../domains/registry';
import { readSeedHarness } from '../../domains/harnesses';
import { tinyBaseCheckpoint } from './tiny-base';
import { createModelActivities, sampleWeightPrompts, type ModelActivityDeps } from '../../activities/model-activities';
import { embeddedBackends } from './embedded-backends';
import { runEmbeddedFineTuneStep } from '../../backends/embedded-fine-tune';
import { trajectoriesFromJsonl, trajectoriesToJsonl } from '../../agent/trajectory';
import type { FineTuneStepInput } from '../../activities/types';

const dirs: string[] = [];
const sandbox = new SandboxPool({ processes: 1 });
const math = getDomain('math').load({ kind: 'synthetic' });
let baseBytes: Uint8Array;

before(async () => {
  baseBytes = await tinyBaseCheckpoint();
});
after(async () => {
  await sandbox.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function makeDeps(): ModelActivityDeps & { close: () => Promise<void> } {
  const dir = mkdtempSync(path.join(tmpdir(), 'whale-acts-'));
  dirs.push(dir);
  const store = new DirectoryArtifactStore(dir);
  const backends = embeddedBackends({ store, sandbox });
  return {
    store, ...backends, limits: { maxNewTokensPerTurn: 24, maxEpisodeTokens: 64 },
    domain: (name) => { if (name !== 'math') throw new Error(`unknown domain "${name}"`); return math; },
    basePolicy: () => baseBytes, seedHarness: (d) => readSeedHarness(d),
  };
}

describe('model activities', () => {
  it('prepares a run, rolls out a batch from the persistent sampler, and evaluates on D_test', async () => {
    const deps = makeDeps();
    const acts = createModelActivities(deps);
    const prep = await acts.prepareRun({ runId: 'r', domain: 'math', seed: 3, modelPreset: 'tiny', baseCheckpoint: null, baseHarness: null });
    assert.deepEqual(prep.splitSizes, { weight: math.splits.weight.length, harness: 256, test: 256 });
    await assert.rejects(acts.prepareRun({ runId: 'r', domain: 'poetry', seed: 3, modelPreset: 'tiny', baseCheckpoint: null, baseHarness: null }), /unknown domain "poetry"/);

    const batch = await acts.rolloutBatch({
      runId: 'r', domain: 'math', step: 1, seed: 3, checkpoint: prep.checkpoint, harness: prep.harness, cursor: { epoch: 0, offset: 0 },
      prompts: 4, samplesPerPrompt: 2, sampling: { temperature: 1, topK: 20 }, acceptThreshold: 0.5,
    });
    assert.equal(batch.rollouts, 8);
    assert.deepEqual(batch.promptIds, sampleWeightPrompts(math.splits.weight, { epoch: 0, offset: 0 }, 4, 3).map((t) => t.id));
    const stored = trajectoriesFromJsonl((await deps.store.get(batch.trajectories)).toString('utf8'));
    assert.equal(stored.length, 8);
    assert.equal(batch.meanReward, stored.reduce((a, t) => a + t.reward, 0) / 8);

    const evald = await acts.evaluateTest({ runId: 'r', domain: 'math', seed: 3, label: 't', checkpoint: prep.checkpoint, harness: prep.harness, samplesPerTask: 2, taskLimit: 3 });
    assert.equal(evald.tasks, 3);
    assert.equal(evald.rollouts, 6);
    assert.ok(evald.meanAt8 >= 0 && evald.meanAt8 <= 1);
    const again = await acts.evaluateTest({ runId: 'r', domain: 'math', seed: 3, label: 't', checkpoint: prep.checkpoint, harness: prep.harness, samplesPerTask: 2, taskLimit: 3 });
    assert.equal(again.detail.sha256, evald.detail.sha256, 'equal (checkpoint, harness, seed) draws equal samples');
    await deps.close();
  });

  it('crosses epoch boundaries without revisiting a prompt within an epoch', () => {
    const items = Array.from({ length: 10 }, (_, i) => i);
    const first = sampleWeightPrompts(items, { epoch: 0, offset: 0 }, 10, 5);
    assert.deepEqual([...first].sort((a, b) => a - b), items);
    const spanning = sampleWeightPrompts(items, { epoch: 0, offset: 7 }, 5, 5);
    assert.deepEqual(spanning.slice(0, 3), first.slice(7));
    assert.deepEqual(spanning.slice(3), sampleWeightPrompts(items, { epoch: 1, offset: 0 }, 2, 5));
  });

  it('fine-tunes on accepted trajectories; repeats are idempotent; an interrupted step resumes to the same hash', async () => {
    // Accepted trajectories: rollouts of the tiny model, with rewards forced to 1 (the verifier is not under test here).
    const deps = makeDeps();
    const acts = createModelActivities(deps);
    const prep = await acts.prepareRun({ runId: 'r', domain: 'math', seed: 4, modelPreset: 'tiny', baseCheckpoint: null, baseHarness: null });
    const batch = await acts.rolloutBatch({
      runId: 'r', domain: 'math', step: 1, seed: 4, checkpoint: prep.checkpoint, harness: prep.harness, cursor: { epoch: 0, offset: 0 },
      prompts: 3, samplesPerPrompt: 2, sampling: { temperature: 1, topK: 20 }, acceptThreshold: 0.5,
    });
    const trajectories = trajectoriesFromJsonl((await deps.store.get(batch.trajectories)).toString('utf8')).map((t, i) => ({ ...t, reward: (i < 5 ? 1 : 0) as 0 | 1 }));
    const jsonl = trajectoriesToJsonl(trajectories);
    // Both minibatch units: 5 accepted trajectories (or their calls) in minibatches of 2 give several updates.
    for (const unit of [{}, { minibatchUnit: 'trajectories' as const }]) {
      const input = (store: DirectoryArtifactStore, checkpoint = prep.checkpoint): Promise<FineTuneStepInput> => store.put('trajectories', jsonl).then((ref) => ({
        runId: 'r', step: 1, seed: 4, checkpoint, trajectories: ref, acceptThreshold: 0.5, learningRate: 1e-3, minibatchSize: 2,
        weightDecay: 0, clipNorm: 1, deterministic: true, ...unit,
      }));

      const ftInput = await input(deps.store as DirectoryArtifactStore);
      const full = await acts.fineTuneStep(ftInput);
      assert.equal(full.updated, true);
      assert.equal(full.acceptedTrajectories, 5);
      assert.ok(full.minibatches >= 3, `expected several minibatches, got ${full.minibatches}`);
      assert.notEqual(full.checkpoint.sha256, prep.checkpoint.sha256);
      assert.deepEqual(await acts.fineTuneStep(ftInput), full, 'a repeated execution returns the stored result');

      // Interrupted after 2 minibatches, then retried with the last heartbeat: same checkpoint hash.
      const other = makeDeps();
      await other.store.put('checkpoint', baseBytes);
      const ftInput2 = await input(other.store as DirectoryArtifactStore);
      const beats: unknown[] = [];
      let seen = 0;
      const trainerOpts = { store: other.store, threads: 1, partialCheckpointEveryMs: 0 };
      await assert.rejects(runEmbeddedFineTuneStep(trainerOpts, ftInput2, {
        heartbeat: (d) => beats.push(d), resumeFrom: undefined,
        throwIfCancelled: () => { if (++seen > 2) throw new Error('worker killed'); },
      }), /worker killed/);
      const last = beats.at(-1) as { minibatch: number };
      assert.equal(last.minibatch, 2);
      const resumed = await runEmbeddedFineTuneStep(trainerOpts, ftInput2, { heartbeat: () => undefined, resumeFrom: last, throwIfCancelled: () => undefined });
      assert.equal(resumed.resumedFromMinibatch, 2);
      assert.equal(resumed.checkpoint.sha256, full.checkpoint.sha256);
      await other.close();
    }
    await deps.close();
  });

  it('skips the update, but reports, when nothing was accepted', async () => {
    const deps = makeDeps();
    const baseRef = await deps.store.put('checkpoint', baseBytes);
    const trajectories = await deps.store.put('trajectories', '');
    const r = await createModelActivities(deps).fineTuneStep({
      runId: 'r', step: 2, seed: 1, checkpoint: baseRef, trajectories, acceptThreshold: 0.5, learningRate: 1e-3, minibatchSize: 2, weightDecay: 0, clipNorm: 1, deterministic: true,
    });
    assert.deepEqual(r, { checkpoint: baseRef, updated: false, acceptedTrajectories: 0, acceptedTokens: 0, minibatches: 0, meanLoss: null, resumedFromMinibatch: 0, keptCalls: 0, droppedCalls: 0 });
  });
});
