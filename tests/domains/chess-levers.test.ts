// The chess harness-lever script (domains/chess/score-harnesses.ts) run for real on the committed chess base:
// it scores the named harnesses through the agent loop and writes their rows; bad options fail naming the fix.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const ROOT = join(__dirname, '..', '..');
const run = (args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'domains', 'chess', 'score-harnesses.ts'), ...args], { cwd: ROOT, encoding: 'utf8' });

void test('score-harnesses: h0 and the reference harness on two D_harness tasks, 8 samples each, rows written', () => {
  const dir = mkdtempSync(join(tmpdir(), 'whale-chess-levers-'));
  try {
    const out = join(dir, 'rows.json');
    const r = run(['--split', 'harness', '--tasks', '2', '--only', 'h0,reference', '--out', out]);
    assert.equal(r.status, 0, r.stderr);
    const file = JSON.parse(readFileSync(out, 'utf8')) as { split: string; tasks: number; rows: Array<{ name: string; episodes: number; meanAt8: number; answerRate: number }> };
    assert.equal(file.split, 'harness');
    assert.equal(file.tasks, 2);
    assert.deepEqual(file.rows.map((x) => x.name), ['h0', 'reference']);
    for (const row of file.rows) {
      assert.equal(row.episodes, 16);
      assert.ok(row.meanAt8 >= 0 && row.meanAt8 <= 1 && row.answerRate >= 0 && row.answerRate <= 1);
    }
    assert.match(r.stdout, /^h0: mean@8 [\d.]+%/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('score-harnesses: a bad split or an unknown harness name is a clear error', () => {
  const bad = run(['--split', 'weight']);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /--split must be harness or test, got "weight"/);
  const none = run(['--only', 'no-such-harness', '--tasks', '1']);
  assert.notEqual(none.status, 0);
  assert.match(none.stderr, /names no harness; try h0,reference/);
});
