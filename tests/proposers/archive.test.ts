// The phase archive as plain files: each candidate's source, meta (parent, hypothesis, changes, axis),
// validation, score and trajectories; the evolution summary, the frontier, the manifest in the store, and
// the completion marker written only by finalize. No temp file is left behind.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { archiveDir, recordCandidateEvaluation } from '../../activities/archive';
import type { ArchiveRow } from '../../activities/types';
import { SandboxPool } from '../../harness-sandbox/pool';
import { fakeTrajectories, proposeInput, setUp } from './fixtures';

const pool = new SandboxPool();
after(() => pool.close());

function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => (statSync(path.join(dir, f)).isDirectory() ? allFiles(path.join(dir, f)).map((x) => `${f}/${x}`) : [f]));
}

test('a whole phase leaves a browsable archive; the completion marker appears only at finalize', async () => {
  const h = await setUp('chess', pool);
  try {
    const incomingRef = await h.store.put('harness', readFileSync(path.join(h.archive.candidateDir('incoming'), 'harness.ts')));
    const rows: ArchiveRow[] = [{ round: 0, name: 'incoming', parent: 'chess-h0', status: 'evaluated', successRate: 0.25, meanTurns: 1.8, meanTokens: 40, hypothesis: 're-score', changes: '', axis: 'baseline', reason: null, source: incomingRef }];
    const r = await h.acts.proposeHarnesses(proposeInput(h, 'chess', 1, { kind: 'builtin' }));
    for (const [i, c] of r.candidates.entries()) {
      const v = await h.acts.validateHarness({ runId: 'run', domain: 'chess', archiveKey: h.archiveKey, name: c.name, source: c.source, promptOnlyBase: null });
      assert.equal(v.valid, true);
      const score = { successRate: 0.25 + 0.05 * i, meanTurns: 2 - 0.1 * i, meanTokens: 30, rollouts: 12 };
      await recordCandidateEvaluation(h.archive, c.name, { ...score, trajectoriesJsonl: fakeTrajectories(12, 2), source: (await h.store.get(c.source)).toString() });
      rows.push({ round: 1, name: c.name, parent: c.parent, status: 'evaluated', successRate: score.successRate, meanTurns: score.meanTurns, meanTokens: 30, hypothesis: c.hypothesis, changes: c.changes, axis: c.axis, reason: null, source: c.source });
    }
    assert.equal(await h.archive.isComplete(), false);
    assert.ok(!existsSync(path.join(h.archive.dir, 'COMPLETE.json')));

    const { archive } = await h.acts.finalizeHarnessPhase({ runId: 'run', archiveKey: h.archiveKey, rows, accepted: 'r1-c3', frontier: ['r1-c3'] });
    assert.equal(await h.archive.isComplete(), true);
    const manifest = JSON.parse((await h.store.get(archive)).toString()) as { archiveKey: string; accepted: string; rows: ArchiveRow[] };
    assert.equal(archive.kind, 'archive');
    assert.equal(manifest.archiveKey, h.archiveKey);
    assert.equal(manifest.rows.length, 4);

    const files = allFiles(h.archive.dir);
    assert.ok(!files.some((f) => f.endsWith('.tmp')), 'no temp files left');
    for (const name of ['incoming', 'r1-c1', 'r1-c2', 'r1-c3']) {
      for (const f of ['harness.ts', 'meta.json', 'score.json', 'trajectories.jsonl']) assert.ok(files.includes(`candidates/${name}/${f}`), `${name}/${f}`);
    }
    for (const f of ['validation.json']) assert.ok(files.includes(`candidates/r1-c1/${f}`));
    for (const f of ['evolution_summary.jsonl', 'frontier.json', 'manifest.json', 'COMPLETE.json', 'rounds/r1/pending_eval.json', 'rounds/r1/proposer.log', 'rounds/r1/result.json']) assert.ok(files.includes(f), f);
    const summary = readFileSync(path.join(h.archive.dir, 'evolution_summary.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { name: string; accepted: boolean; onFrontier: boolean; hypothesis: string });
    assert.deepEqual(summary.map((s) => s.name), ['incoming', 'r1-c1', 'r1-c2', 'r1-c3']);
    assert.deepEqual(summary.filter((s) => s.accepted).map((s) => s.name), ['r1-c3']);
    const frontier = JSON.parse(readFileSync(path.join(h.archive.dir, 'frontier.json'), 'utf8')) as { frontier: Array<{ name: string }> };
    assert.deepEqual(frontier.frontier.map((f) => f.name), ['r1-c3']);
    const incomingMeta = JSON.parse(readFileSync(path.join(h.archive.candidateDir('incoming'), 'meta.json'), 'utf8')) as { parent: string };
    assert.equal(incomingMeta.parent, 'chess-h0');
    // Finalize is idempotent (an activity retry rewrites the same files).
    const again = await h.acts.finalizeHarnessPhase({ runId: 'run', archiveKey: h.archiveKey, rows, accepted: 'r1-c3', frontier: ['r1-c3'] });
    assert.deepEqual(again.archive, archive);
    // Proposing again under a complete archive's key (a reset to the phase start) reopens it: the marker
    // never claims a phase in progress; the recorded round result is returned unchanged.
    const replayed = await h.acts.proposeHarnesses(proposeInput(h, 'chess', 1, { kind: 'builtin' }));
    assert.deepEqual(replayed, r);
    assert.equal(await h.archive.isComplete(), false);
    assert.match(readFileSync(path.join(h.archive.roundDir(1), 'reopened.log'), 'utf8'), /completion marker removed/);
  } finally {
    h.cleanup();
  }
});

test('archive keys and candidate names cannot escape the archive folder', () => {
  assert.throws(() => archiveDir('/x', '../etc'), /invalid archive key/);
  assert.throws(() => archiveDir('/x', 'run/../../y'), /invalid archive key/);
  assert.equal(archiveDir('/x', 'run-1/harness-phase-2'), path.join('/x', 'archives', 'run-1', 'harness-phase-2'));
});
