// Idempotency: every activity type executed twice with the same input, as a retry after a lost
// completion would, leaves the same artifacts (every file under the shared artifact directory, by content)
// and returns the same result. Real activities on small real parts: a tiny onnxruntime model, the math
// domain, the real sandbox, the built-in proposer and one directory store shared by both workers' activities.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { SandboxPool } from '../../harness-sandbox/pool';
import { getDomain } from '../../domains/registry';
import { readSeedHarness } from '../../domains/harnesses';
import { tinyBaseCheckpoint } from '../activities/tiny-base';
import { createModelActivities } from '../../activities/model-activities';
import { embeddedBackends } from '../activities/embedded-backends';
import { createProposerActivities } from '../../activities/proposer-activities';
import { trajectoriesFromJsonl, trajectoriesToJsonl } from '../../agent/trajectory';
import type { ArchiveRow, WhaleActivities } from '../../activities/types';

const root = mkdtempSync(path.join(tmpdir(), 'whale-idem-'));
const sandbox = new SandboxPool({ processes: 1 });
const math = getDomain('math').load({ kind: 'synthetic' });
const store = new DirectoryArtifactStore(root);
const backends = embeddedBackends({ store, sandbox, partialCheckpointEveryMs: 0 });
let baseBytes: Uint8Array;
let acts: WhaleActivities;

before(async () => {
  baseBytes = await tinyBaseCheckpoint();
  const model = createModelActivities({
    store, ...backends, limits: { maxNewTokensPerTurn: 24, maxEpisodeTokens: 64 }, archiveRoot: root,
    domain: () => math, basePolicy: () => baseBytes, seedHarness: (d) => readSeedHarness(d),
  });
  const proposer = createProposerActivities({ store, artifactRoot: root, sandbox, domain: () => math });
  acts = { ...model, ...proposer };
});
after(async () => {
  await backends.close();
  await sandbox.close();
  rmSync(root, { recursive: true, force: true });
});

/** Every file under the artifact directory by content hash (temp files included: none may be left). */
function contents(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(path.relative(root, p), createHash('sha256').update(readFileSync(p)).digest('hex'));
    }
  };
  walk(root);
  return out;
}

const executions: string[] = [];

/**
 * Runs an activity as attempt 1 and again as attempt 2 (the retry Temporal schedules when the first
 * completion was lost), in a real activity context; both leave the same files and return the same result.
 */
async function twice<I, R>(name: keyof WhaleActivities, fn: (input: I) => Promise<R>, input: I, writes = true): Promise<R> {
  const before = contents();
  const first = (await new MockActivityEnvironment({ attempt: 1 }).run(fn, input)) as R;
  const afterFirst = contents();
  const second = await new MockActivityEnvironment({ attempt: 2 }).run(fn, input);
  const afterSecond = contents();
  assert.deepEqual(second, first, `${name}: the repeated execution returns the same result`);
  assert.deepEqual([...afterSecond.entries()].sort(), [...afterFirst.entries()].sort(), `${name}: the repeated execution leaves the same artifacts`);
  if (writes) assert.notDeepEqual([...afterFirst.keys()].sort(), [...before.keys()].sort(), `${name}: the first execution must write something for this check to mean anything`);
  assert.ok(![...afterSecond.keys()].some((k) => k.endsWith('.tmp')), `${name}: no temp file left`);
  executions.push(name);
  return first;
}

describe('each activity executed twice with the same input', () => {
  it('leaves the same artifacts and returns the same result', async () => {
    const prep = await twice('prepareRun', acts.prepareRun, { runId: 'r', domain: 'math', seed: 3, modelPreset: 'tiny', baseCheckpoint: null, baseHarness: null });
    const batch = await twice('rolloutBatch', acts.rolloutBatch, {
      runId: 'r', domain: 'math', step: 1, seed: 3, checkpoint: prep.checkpoint, harness: prep.harness, cursor: { epoch: 0, offset: 0 },
      prompts: 3, samplesPerPrompt: 2, sampling: { temperature: 1, topK: 20 }, acceptThreshold: 0.5,
    });
    // Accepted trajectories (rewards forced to 1: the verifier is not under test), so the step trains.
    const accepted = await store.put('trajectories', trajectoriesToJsonl(trajectoriesFromJsonl((await store.get(batch.trajectories)).toString('utf8')).map((t) => ({ ...t, reward: 1 as const }))));
    const step = await twice('fineTuneStep', acts.fineTuneStep, {
      runId: 'r', step: 1, seed: 3, checkpoint: prep.checkpoint, trajectories: accepted, acceptThreshold: 0.5, learningRate: 1e-3, minibatchSize: 2, weightDecay: 0, clipNorm: 1, deterministic: true,
    });
    assert.equal(step.updated, true);
    assert.ok(step.minibatches >= 2);
    await twice('evaluateTest', acts.evaluateTest, { runId: 'r', domain: 'math', seed: 3, label: 'initial', checkpoint: step.checkpoint, harness: prep.harness, samplesPerTask: 2, taskLimit: 3 });

    const archiveKey = 'r/harness-phase-1';
    const incoming = await twice('evaluateHarness', acts.evaluateHarness, { runId: 'r', domain: 'math', seed: 3, archiveKey, name: 'incoming', harness: prep.harness, checkpoint: step.checkpoint, rolloutsPerTask: 1, taskLimit: 4 });
    const proposed = await twice('proposeHarnesses', acts.proposeHarnesses, { runId: 'r', domain: 'math', seed: 3, cycle: 1, round: 1, count: 2, promptOnly: false, archiveKey, accepted: 'incoming', proposer: { kind: 'builtin' } });
    assert.equal(proposed.failure, null);
    assert.ok(proposed.candidates.length >= 1);
    const candidate = proposed.candidates[0];
    const validation = await twice('validateHarness', acts.validateHarness, { runId: 'r', domain: 'math', archiveKey, name: candidate.name, source: candidate.source, promptOnlyBase: null });
    const rows: ArchiveRow[] = [
      { round: 0, name: 'incoming', parent: 'incoming', status: 'evaluated', successRate: incoming.successRate, meanTurns: incoming.meanTurns, meanTokens: incoming.meanTokens, hypothesis: '', changes: '', axis: '', reason: null, source: prep.harness },
      { round: 1, name: candidate.name, parent: candidate.parent, status: validation.valid ? 'evaluated' : 'invalid', successRate: null, meanTurns: null, meanTokens: null, hypothesis: candidate.hypothesis, changes: candidate.changes, axis: candidate.axis, reason: validation.reason, source: candidate.source },
    ];
    await twice('finalizeHarnessPhase', acts.finalizeHarnessPhase, { runId: 'r', archiveKey, rows, accepted: 'incoming', frontier: ['incoming'] });

    const all: (keyof WhaleActivities)[] = ['prepareRun', 'rolloutBatch', 'fineTuneStep', 'evaluateTest', 'evaluateHarness', 'proposeHarnesses', 'validateHarness', 'finalizeHarnessPhase'];
    assert.deepEqual([...executions].sort(), [...all].sort(), 'every activity type of the run workflow is covered');
  });
});
