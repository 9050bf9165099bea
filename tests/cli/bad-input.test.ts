// Bad input at the command line: each case exits non-zero with a message naming the problem and the fix,
// before anything is started (no server needed). The cases and their messages live in the catalogue
// (tests/faults/bad-input-catalogue.ts, shown in docs/faults-bad-input.md).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after } from 'node:test';
import { ROOT } from '../workflows/env';
import { badInput, type BadInputCase } from '../faults/bad-input-catalogue';

const dir = mkdtempSync(path.join(tmpdir(), 'whale-bad-'));
after(() => rmSync(dir, { recursive: true, force: true }));
function file(name: string, text: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}
function whale(args: string[], extraEnv: Record<string, string> = {}) {
  // An unused port: nothing may ever reach a server in these cases.
  return spawnSync(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], { encoding: 'utf8', env: { ...process.env, WHALE_TEMPORAL_ADDRESS: '127.0.0.1:1', ...extraEnv } });
}
const json = (name: string, value: unknown) => file(name, JSON.stringify(value));
const devDataDir = path.join(dir, 'dev-data');

const cases: [BadInputCase, () => string[], number, Record<string, string>?][] = [
  [badInput('cli-missing-file'), () => ['start', path.join(dir, 'nope.json')], 2],
  [badInput('cli-not-json'), () => ['start', file('bad.json', '{"version": 1,')], 2],
  [badInput('cli-bad-field'), () => ['run', json('f.json', { version: 1, weight: { topK: -1 } })], 2],
  [badInput('cli-unknown-version'), () => ['start', json('v.json', { version: 2 })], 2],
  [badInput('cli-unknown-preset'), () => ['run', '--preset', 'nonsense'], 2],
  [badInput('cli-file-and-preset'), () => ['run', file('ok.json', '{"version":1}'), '--preset', 'demo'], 2],
  [badInput('cli-no-config'), () => ['run'], 2],
  [badInput('cli-unknown-queue'), () => ['worker', '--queue', 'gpu'], 2],
  [badInput('cli-audit-no-run'), () => ['audit'], 2],
  [badInput('cli-audit-not-history'), () => ['audit', '--history', file('h.json', '{"hello": 1}'), '--out', path.join(dir, 'report-1')], 1],
  [badInput('cli-unreachable-server'), () => ['status', 'some-run'], 1],
  [badInput('cli-bad-seed'), () => ['start', '--preset', 'demo', '--seed', 'abc'], 2],
  [badInput('cli-config-array'), () => ['start', json('array.json', [1, 2])], 2],
  [badInput('cli-unknown-field'), () => ['start', json('typo.json', { version: 1, wieght: { topK: 3 } })], 2],
  [badInput('cli-method-switching'), () => ['start', json('adaptive.json', { version: 1, method: 'whale-adaptive', switching: { kind: 'fixed' } })], 2],
  [badInput('cli-no-weight-steps'), () => ['start', json('zero.json', { version: 1, method: 'weights-only', budget: { totalWeightSteps: 0 } })], 2],
  [badInput('cli-bad-env'), () => ['status', 'some-run'], 1, { WHALE_DEV_PORT: 'abc' }],
  // A free port and a private data folder: if the check ever came after the server start, no one else's server is touched.
  [badInput('cli-dev-unknown-worker'), () => ['dev', '--headless', '--workers', 'gpu'], 2, { WHALE_DEV_PORT: '1', WHALE_DEV_UI_PORT: '2', WHALE_DEV_DATA_DIR: devDataDir }],
  [badInput('cli-audit-truncated-history'), () => ['audit', '--history', file('truncated.json', readFirstHistoryHalf()), '--out', path.join(dir, 'report-2')], 1],
];

/** The first half of a recorded history: a real export cut off mid-way. */
function readFirstHistoryHalf(): string {
  const v1 = path.join(ROOT, 'tests', 'histories', 'v1');
  const text = readFileSync(path.join(v1, readdirSync(v1).filter((f) => f.endsWith('.json')).sort()[0]), 'utf8');
  return text.slice(0, Math.floor(text.length / 2));
}

describe('bad input at the CLI', () => {
  for (const [c, args, code, extraEnv] of cases) {
    it(`rejects ${c.input} (${c.id})`, () => {
      const r = whale(args(), extraEnv);
      assert.equal(r.status, code, r.stdout + r.stderr);
      assert.match(r.stderr, c.message);
      assert.doesNotMatch(r.stderr, /\n\s+at .*\(.*:\d+:\d+\)/, 'a user error is printed without a stack trace');
    });
  }

  it('leaves nothing behind for rejected input: no report folder, no dev-server data', () => {
    assert.equal(existsSync(path.join(dir, 'report-1')), false);
    assert.equal(existsSync(path.join(dir, 'report-2')), false);
    assert.equal(existsSync(devDataDir), false, '`whale dev --workers gpu` must exit before starting the server');
  });
});
