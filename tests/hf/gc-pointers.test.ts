// Retention of external-trainer step folders (store/gc.ts, store/gc-step-folders.ts): a step folder holds a
// trainer's request, dataset and checkpoint folders (about 1 GB per step for a 0.5B full fine-tune). gc
// removes the folders no live or retained run's checkpoint pointer names and never one a live run points to,
// also when only a name binding (a finished step's cached result) or a young object reaches the pointer.
// References are written by hand here; tests/hf/e2e-run.test.ts runs `whale gc` on a real pointer run.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { putCheckpointPointer } from '../../backends/checkpoint-pointer';
import { applyGc, objectPath, planGc, type LiveReferences } from '../../store/gc';
import { formatPlan } from '../../cli/gc-command';
import type { ArtifactRef } from '../../store/artifact-ref';

let root: string;
let store: DirectoryArtifactStore;
const HOUR = 3_600_000;
const old = (Date.now() - 3 * HOUR) / 1000;

before(() => {
  root = mkdtempSync(path.join(tmpdir(), 'whale-gc-pointers-'));
  store = new DirectoryArtifactStore(root);
});
after(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** A step folder as the reference trainer leaves it: request, dataset and one checkpoint folder. */
function stepFolder(key: string): string {
  const dir = path.join(root, 'external-trainer', key);
  const weights = path.join(dir, `hf-step-1-${key}`);
  mkdirSync(weights, { recursive: true });
  writeFileSync(path.join(dir, 'request.json'), '{}');
  writeFileSync(path.join(dir, 'dataset.jsonl'), '{}\n');
  writeFileSync(path.join(weights, 'model.safetensors'), Buffer.alloc(4096, 1));
  writeFileSync(path.join(weights, 'config.json'), '{}');
  return weights;
}

/** Backdates every file of a step folder and every object, so only references keep them. */
function age(paths: string[]) {
  for (const p of paths) utimesSync(p, old, old);
}

async function pointerTo(weights: string): Promise<ArtifactRef> {
  return putCheckpointPointer(store, { whaleCheckpointPointer: 1, model: weights, uri: `file://${weights}` });
}

describe('gc of external-trainer step folders', () => {
  it('removes the step folders no kept pointer names, keeps live and retained runs\' ones', async () => {
    const live = stepFolder('a'.repeat(32)); // a live run's current weights (its summary/result mentions the pointer)
    const cached = stepFolder('b'.repeat(32)); // reached only through a name binding of a finished step
    const dead = stepFolder('c'.repeat(32)); // a deleted run's step: its pointer is unreferenced
    const orphan = stepFolder('d'.repeat(32)); // a step killed before answering: no pointer at all
    const young = stepFolder('e'.repeat(32)); // written within the grace age (a step in flight)
    const liveRef = await pointerTo(live);
    const cachedRef = await pointerTo(cached);
    const deadRef = await pointerTo(dead);
    const result = await store.put('blob', JSON.stringify({ checkpoint: cachedRef, updated: true }));
    await store.bindName(`fine-tune/${'f'.repeat(64)}`, result);
    // The runs' references: only the live pointer directly; the binding keeps its result, which keeps its pointer.
    const refs: LiveReferences = { hashes: new Set([liveRef.sha256, result.sha256]), archiveKeys: new Set(), protectSinceMs: null };
    const files = [liveRef, cachedRef, deadRef, result].map((r) => objectPath(root, r.sha256));
    for (const key of ['a', 'b', 'c', 'd']) {
      const dir = path.join(root, 'external-trainer', key.repeat(32));
      const weights = path.join(dir, `hf-step-1-${key.repeat(32)}`);
      age([path.join(weights, 'model.safetensors'), path.join(weights, 'config.json'), weights, path.join(dir, 'request.json'), path.join(dir, 'dataset.jsonl'), dir]);
    }
    age([...files, path.join(root, 'names', 'fine-tune', `${'f'.repeat(64)}.json`)]);

    const plan = await planGc(root, refs, { graceMs: HOUR });
    assert.deepEqual(plan.stepFolders.map((f) => f.key).sort(), ['c'.repeat(32), 'd'.repeat(32)], formatPlan(plan));
    assert.equal(plan.kept.stepFolders, 3);
    assert.deepEqual(plan.objects.map((o) => o.sha256), [deadRef.sha256], 'the dead run\'s pointer goes with its folder');
    assert.ok(plan.stepFolders.every((f) => f.files === 4 && f.bytes > 4096));
    assert.match(formatPlan(plan), new RegExp(`2 trainer step folders: .*\\n(.*\\n)*  step     external-trainer/${'c'.repeat(32)}  \\(4 files`));

    // A file touched after the plan was made (a retried step writing again) keeps its folder.
    writeFileSync(path.join(orphan, 'config.json'), '{"touched": true}');
    const done = await applyGc(plan);
    assert.equal(done.removed.stepFolders, 1);
    assert.ok(done.skipped.some((s) => s.includes(`external-trainer/${'d'.repeat(32)}`)), done.skipped.join('\n'));
    assert.ok(!existsSync(path.dirname(dead)), 'the dead run\'s step folder is gone');
    for (const kept of [live, cached, young, orphan]) assert.ok(existsSync(path.join(kept, 'model.safetensors')), `${kept} is kept`);
    assert.ok(existsSync(objectPath(root, liveRef.sha256)) && existsSync(objectPath(root, cachedRef.sha256)));

    // Once no run references the live pointer (its run deleted), its folder goes too; the young one stays.
    const later = await planGc(root, { hashes: new Set(), archiveKeys: new Set(), protectSinceMs: null }, { graceMs: HOUR, nowMs: Date.now() + 2 * HOUR });
    assert.ok(later.stepFolders.some((f) => f.key === 'a'.repeat(32)));
    const inFlight = await planGc(root, { hashes: new Set(), archiveKeys: new Set(), protectSinceMs: Date.now() - 5 * HOUR }, { graceMs: 0 });
    assert.deepEqual(inFlight.stepFolders, [], 'nothing written since the oldest activity in flight started is removed');
  });
});
