// Bad input in files and activity inputs, on real activities with small real parts (a tiny onnxruntime
// model, the math domain, the real sandbox, a directory store): damaged checkpoints and trajectory files,
// data sets with broken lines, harness files that are not TypeScript, read-only directories. Each gives the
// catalogue's message, fails the right unit with the right retry class, and changes nothing in the store.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import type { ArtifactRef } from '../../store/artifact-ref';
import { SandboxPool } from '../../harness-sandbox/pool';
import { getDomain } from '../../domains/registry';
import { readSeedHarness } from '../../domains/harnesses';
import { tinyBaseCheckpoint } from '../activities/tiny-base';
import { createModelActivities, type ModelActivityDeps } from '../../activities/model-activities';
import { embeddedBackends } from '../activities/embedded-backends';
import { createProposerActivities } from '../../activities/proposer-activities';
import { openArchive } from '../../activities/archive';
import { trajectoriesFromJsonl, trajectoriesToJsonl } from '../../agent/trajectory';
import { loadGsm8kJsonl } from '../../domains/math/loader';
import { loadCorpusJsonl } from '../../domains/search-qa/loader';
import { loadLichessCsv } from '../../domains/chess/lichess-loader';
import type { FineTuneStepInput, RolloutBatchInput } from '../../activities/types';
import { badInput } from './bad-input-catalogue';

const dirs: string[] = [];
const sandbox = new SandboxPool({ processes: 1 });
const math = getDomain('math').load({ kind: 'synthetic' });
let baseBytes: Uint8Array;

before(async () => {
  baseBytes = await tinyBaseCheckpoint();
});
after(async () => {
  await sandbox.close();
  for (const d of dirs) {
    spawnSync('chattr', ['-R', '-i', d]);
    rmSync(d, { recursive: true, force: true });
  }
});

function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'whale-badin-'));
  dirs.push(d);
  return d;
}

function makeDeps(): ModelActivityDeps & { root: string; store: DirectoryArtifactStore; close: () => Promise<void> } {
  const root = tempDir();
  const store = new DirectoryArtifactStore(root);
  return {
    root, store, ...embeddedBackends({ store, sandbox }), limits: { maxNewTokensPerTurn: 24, maxEpisodeTokens: 64 },
    domain: (name) => getDomain(name) && math, basePolicy: () => baseBytes, seedHarness: (d) => readSeedHarness(d),
  };
}

const prepInput = (extra: Record<string, unknown> = {}) => ({ runId: 'r', domain: 'math', seed: 3, modelPreset: 'tiny', baseCheckpoint: null, baseHarness: null, ...extra });
const batchInput = (checkpoint: ArtifactRef, harness: ArtifactRef): RolloutBatchInput => ({
  runId: 'r', domain: 'math', step: 1, seed: 3, checkpoint, harness, cursor: { epoch: 0, offset: 0 },
  prompts: 3, samplesPerPrompt: 2, sampling: { temperature: 1, topK: 20 }, acceptThreshold: 0.5,
});
const ftInput = (checkpoint: ArtifactRef, trajectories: ArtifactRef): FineTuneStepInput => ({
  runId: 'r', step: 1, seed: 4, checkpoint, trajectories, acceptThreshold: 0.5, learningRate: 1e-3, minibatchSize: 2, weightDecay: 0, clipNorm: 1, deterministic: true,
});

const objectPath = (root: string, ref: ArtifactRef) => path.join(root, 'objects', ref.sha256.slice(0, 2), ref.sha256.slice(2));

/** Every file under a directory with its size and modification time: "nothing changed" means this is equal. */
function snapshot(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(`${path.relative(root, p)} ${statSync(p).size} ${statSync(p).mtimeMs}`);
    }
  };
  if (existsSync(root)) walk(root);
  return out.sort();
}

function flipBytes(file: string): Buffer {
  const original = readFileSync(file);
  const bad = Buffer.from(original);
  for (let i = 0; i < 8; i++) bad[Math.floor(bad.length / 2) + i] ^= 0xff;
  chmodSync(file, 0o644);
  writeFileSync(file, bad);
  return original;
}

/** Makes a tree read-only for this process, as root too (chmod alone does not stop root; the immutable flag does). */
function makeReadOnly(dir: string): void {
  spawnSync('chmod', ['-R', 'a-w', dir]);
  const probe = path.join(dir, '.probe');
  const writable = () => {
    try {
      writeFileSync(probe, '');
      rmSync(probe);
      return true;
    } catch {
      return false;
    }
  };
  if (!writable()) return;
  const r = spawnSync('chattr', ['-R', '+i', dir], { encoding: 'utf8' });
  assert.equal(writable(), false, `cannot make ${dir} read-only for this test (chmod had no effect and chattr said: ${r.stderr || r.error?.message})`);
}
function makeWritable(dir: string): void {
  spawnSync('chattr', ['-R', '-i', dir]);
  spawnSync('chmod', ['-R', 'u+w', dir]);
}

/** The failure as the workflow would see it: message, and whether Temporal retries it. */
async function failure(p: Promise<unknown>): Promise<{ message: string; retryable: boolean; type: string | null }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApplicationFailure) return { message: err.message, retryable: !err.nonRetryable, type: err.type ?? null };
    return { message: (err as Error).message, retryable: true, type: (err as Error).name };
  }
  assert.fail('expected the activity to fail');
}

/** Accepted trajectories of the tiny model (rewards forced to 1: the verifier is not under test). */
async function acceptedTrajectories(deps: ReturnType<typeof makeDeps>, checkpoint: ArtifactRef, harness: ArtifactRef): Promise<string> {
  const acts = createModelActivities(deps);
  const batch = await acts.rolloutBatch(batchInput(checkpoint, harness));
  return trajectoriesToJsonl(trajectoriesFromJsonl((await deps.store.get(batch.trajectories)).toString('utf8')).map((t) => ({ ...t, reward: 1 as const })));
}

describe('bad activity inputs', () => {
  it('an unknown domain fails prepareRun without retrying', async () => {
    const deps = makeDeps();
    const f = await failure(createModelActivities(deps).prepareRun(prepInput({ domain: 'poetry' })));
    assert.match(f.message, badInput('activity-unknown-domain').message);
    assert.deepEqual([f.retryable, f.type], [false, 'ConfigError']);
    assert.deepEqual(snapshot(deps.root), [], 'nothing stored for a rejected run');
  });

  it('a base checkpoint the store does not hold, and a truncated one, fail prepareRun without retrying', async () => {
    const deps = makeDeps();
    const acts = createModelActivities(deps);
    const absent = await deps.store.put('checkpoint', baseBytes);
    rmSync(objectPath(deps.root, absent));
    const f1 = await failure(acts.prepareRun(prepInput({ baseCheckpoint: absent })));
    assert.match(f1.message, badInput('activity-missing-checkpoint').message);
    assert.equal(f1.retryable, false);

    const truncated = await deps.store.put('checkpoint', baseBytes.subarray(0, Math.floor(baseBytes.length / 2)));
    const before = snapshot(deps.root);
    const f2 = await failure(acts.prepareRun(prepInput({ baseCheckpoint: truncated })));
    assert.match(f2.message, badInput('activity-truncated-base-checkpoint').message);
    assert.deepEqual([f2.retryable, f2.type], [false, 'ConfigError']);
    assert.deepEqual(snapshot(deps.root), before);
  });
});

describe('damaged artifacts', () => {
  it('a corrupted checkpoint fails the rollout batch (retryable) naming file and hash; restored, the retry succeeds', async () => {
    const deps = makeDeps();
    const acts = createModelActivities(deps);
    const prep = await acts.prepareRun(prepInput());
    const file = objectPath(deps.root, prep.checkpoint);
    const original = flipBytes(file);
    const before = snapshot(deps.root);
    const f = await failure(acts.rolloutBatch(batchInput(prep.checkpoint, prep.harness)));
    assert.match(f.message, badInput('artifact-corrupt-checkpoint').message);
    assert.ok(f.message.includes(prep.checkpoint.sha256) && f.message.includes(file), f.message);
    assert.equal(f.retryable, true, 'store damage is an operator fix: the activity keeps retrying until the object is restored');
    assert.deepEqual(snapshot(deps.root), before, 'a failed batch writes nothing');
    writeFileSync(file, original);
    const batch = await acts.rolloutBatch(batchInput(prep.checkpoint, prep.harness));
    assert.equal(batch.rollouts, 6);
    await deps.close();
  });

  it('a truncated checkpoint or corrupted trajectories fail the fine-tune step (retryable) and write nothing', async () => {
    const deps = makeDeps();
    const acts = createModelActivities(deps);
    const prep = await acts.prepareRun(prepInput());
    const trajectories = await deps.store.put('trajectories', await acceptedTrajectories(deps, prep.checkpoint, prep.harness));
    await deps.close();

    const ckFile = objectPath(deps.root, prep.checkpoint);
    const ckOriginal = readFileSync(ckFile);
    chmodSync(ckFile, 0o644);
    writeFileSync(ckFile, ckOriginal.subarray(0, ckOriginal.length - 1000));
    let before = snapshot(deps.root);
    const f1 = await failure(acts.fineTuneStep(ftInput(prep.checkpoint, trajectories)));
    assert.match(f1.message, badInput('artifact-truncated-checkpoint').message);
    assert.ok(f1.message.includes(ckFile), f1.message);
    assert.equal(f1.retryable, true);
    assert.deepEqual(snapshot(deps.root), before);
    writeFileSync(ckFile, ckOriginal);

    const trFile = objectPath(deps.root, trajectories);
    flipBytes(trFile);
    before = snapshot(deps.root);
    const f2 = await failure(acts.fineTuneStep(ftInput(prep.checkpoint, trajectories)));
    assert.match(f2.message, badInput('artifact-corrupt-trajectories').message);
    assert.ok(f2.message.includes(trajectories.sha256), f2.message);
    assert.equal(f2.retryable, true);
    assert.deepEqual(snapshot(deps.root), before);
  });

  it('a trajectories file with a broken, truncated or foreign line fails the step without retrying, naming file, hash and line', async () => {
    const deps = makeDeps();
    const acts = createModelActivities(deps);
    const prep = await acts.prepareRun(prepInput());
    const lines = (await acceptedTrajectories(deps, prep.checkpoint, prep.harness)).trim().split('\n');
    await deps.close();
    const variants: [string, string][] = [
      ['artifact-trajectories-broken-line', [lines[0], '{"schemaVersion": 1, "trajectoryId": ', lines[1]].join('\n') + '\n'],
      ['artifact-trajectories-truncated', [lines[0], lines[1], lines[2].slice(0, Math.floor(lines[2].length / 2))].join('\n')],
      ['artifact-trajectories-wrong-shape', JSON.stringify({ hello: 'world' }) + '\n'],
    ];
    for (const [id, text] of variants) {
      const ref = await deps.store.put('trajectories', text);
      const before = snapshot(deps.root);
      const f = await failure(acts.fineTuneStep(ftInput(prep.checkpoint, ref)));
      assert.match(f.message, badInput(id).message, id);
      assert.ok(f.message.includes(ref.uri), f.message);
      assert.deepEqual([f.retryable, f.type], [false, 'CorruptArtifact'], id);
      assert.deepEqual(snapshot(deps.root), before, `${id}: no checkpoint or result written`);
    }
  });
});

describe('data sets with broken lines', () => {
  it('names the file and line of each broken line', () => {
    const d = tempDir();
    const file = (name: string, text: string) => (writeFileSync(path.join(d, name), text), path.join(d, name));
    const good = JSON.stringify({ question: 'Two plus two?', answer: '2+2=4\n#### 4' });
    const cases: [string, () => unknown][] = [
      ['dataset-gsm8k-broken-json', () => loadGsm8kJsonl(file('gsm8k.jsonl', `${good}\n{"question": "Three?", "answer": "1+2=3\n`), { onMalformed: 'reject' })],
      ['dataset-gsm8k-no-answer', () => loadGsm8kJsonl(file('gsm8k-noanswer.jsonl', JSON.stringify({ question: 'Five?', answer: 'The answer is 5' }) + '\n'), { onMalformed: 'reject' })],
      ['dataset-qa-not-object', () => loadCorpusJsonl(file('corpus.jsonl', `${JSON.stringify({ id: 'd1', title: 'A', text: 'a' })}\n[1, 2]\n`), { onMalformed: 'reject' })],
      ['dataset-lichess-bad-fen', () => loadLichessCsv(file('puzzles.csv', [
        'PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags',
        '0000D,5rk1/1p3ppp/pq3b2/8/8/1P1Q1N2/P4PPP/3R2K1 w - - 2 27,d3d6 f8d8 d6d8 f6d8,1517,75,96,25029,advantage endgame short,https://lichess.org/F8M8OS71#53,',
        '0000E,9/9/9 w - - 0 1,d3d6 f8d8,1517,75,96,25029,advantage,https://lichess.org/x#1,',
      ].join('\n') + '\n'), { onMalformed: 'reject' })],
      ['dataset-missing-file', () => loadGsm8kJsonl(path.join(d, 'no-such.jsonl'), { onMalformed: 'reject' })],
    ];
    for (const [id, load] of cases) assert.throws(load, badInput(id).message, id);
    // Skip mode keeps the good lines and lists the bad one (never silently drops it).
    const skipped = loadGsm8kJsonl(path.join(d, 'gsm8k.jsonl'), { onMalformed: 'skip' });
    assert.deepEqual([skipped.items.length, skipped.skipped.map((s) => s.line)], [1, [2]]);
  });
});

describe('harness files that are not TypeScript or do not compile', () => {
  it('a bad candidate is marked invalid in the archive and the phase goes on', async () => {
    const root = tempDir();
    const store = new DirectoryArtifactStore(root);
    const acts = createProposerActivities({ store, artifactRoot: root, sandbox, domain: () => math });
    const h0 = readSeedHarness('math');
    const sources: [string, string][] = [
      ['harness-python', 'def harness(task):\n    return {"maxTurns": 2}\n'],
      ['harness-type-error', h0.replace('maxTurns: 2', "maxTurns: 'three'")],
    ];
    for (const [i, [id, source]] of sources.entries()) {
      const ref = await store.put('harness', source);
      const r = await acts.validateHarness({ runId: 'r', domain: 'math', archiveKey: 'r/harness-phase-1', name: `r1-c${i + 1}`, source: ref, promptOnlyBase: null });
      assert.equal(r.valid, false, id);
      assert.match(`${r.failureKind}: ${r.reason}`, badInput(id).message, id);
      const archived = JSON.parse(readFileSync(path.join(openArchive(root, 'r/harness-phase-1').candidateDir(`r1-c${i + 1}`), 'validation.json'), 'utf8')) as { valid: boolean };
      assert.equal(archived.valid, false);
    }
  });

  it('a base harness that is not TypeScript fails the rollout batch without retrying (the run is at fault)', async () => {
    const deps = makeDeps();
    const acts = createModelActivities(deps);
    const prep = await acts.prepareRun(prepInput());
    const python = await deps.store.put('harness', 'import os\nprint("hello")\n');
    const f = await failure(acts.rolloutBatch(batchInput(prep.checkpoint, python)));
    assert.match(f.message, badInput('harness-base-not-typescript').message);
    assert.deepEqual([f.retryable, f.type], [false, 'InvalidHarness']);
    await deps.close();
  });
});

describe('read-only directories', () => {
  it('a read-only archive fails validation with the directory named, retryably, and nothing half-written', async () => {
    const root = tempDir();
    const store = new DirectoryArtifactStore(root);
    const acts = createProposerActivities({ store, artifactRoot: root, sandbox, domain: () => math });
    const input = async (name: string) => ({ runId: 'r', domain: 'math', archiveKey: 'r/harness-phase-1', name, source: await store.put('harness', readSeedHarness('math')), promptOnlyBase: null });
    const first = await input('r1-c1');
    assert.equal((await acts.validateHarness(first)).valid, true);
    const second = await input('r1-c2');
    const archiveDir = openArchive(root, 'r/harness-phase-1').dir;
    makeReadOnly(archiveDir);
    try {
      const before = snapshot(archiveDir);
      const f = await failure(acts.validateHarness(second));
      assert.match(f.message, badInput('fs-readonly-archive').message);
      assert.equal(f.retryable, true);
      assert.deepEqual(snapshot(archiveDir), before, 'no file added, changed or left half-written');
    } finally {
      makeWritable(archiveDir);
    }
    assert.equal((await acts.validateHarness(second)).valid, true, 'once writable again, the retry succeeds');
  });

  it('a read-only artifact store fails the rollout batch with the directory named, and the store is unchanged', async () => {
    const deps = makeDeps();
    const acts = createModelActivities(deps);
    const prep = await acts.prepareRun(prepInput());
    makeReadOnly(deps.root);
    try {
      const before = snapshot(deps.root);
      const f = await failure(acts.rolloutBatch(batchInput(prep.checkpoint, prep.harness)));
      assert.match(f.message, badInput('fs-readonly-store').message);
      assert.equal(f.retryable, true);
      assert.deepEqual(snapshot(deps.root), before);
    } finally {
      makeWritable(deps.root);
    }
    await deps.close();
  });
});
