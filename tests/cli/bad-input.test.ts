// Bad input at the command line: each case exits non-zero with a message naming the problem and the fix,
// before anything is started (no server needed).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after } from 'node:test';
import { ROOT } from '../workflows/env';

const dir = mkdtempSync(path.join(tmpdir(), 'whale-bad-'));
after(() => rmSync(dir, { recursive: true, force: true }));
function file(name: string, text: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}
function whale(...args: string[]) {
  // An unused port: nothing may ever reach a server in these cases.
  return spawnSync(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], { encoding: 'utf8', env: { ...process.env, WHALE_TEMPORAL_ADDRESS: '127.0.0.1:1' } });
}

const cases: [string, () => string[], number, RegExp][] = [
  ['a missing config file', () => ['start', path.join(dir, 'nope.json')], 2, /cannot read run config .*nope\.json: no such file/],
  ['a config that is not JSON', () => ['start', file('bad.json', '{"version": 1,')], 2, /is not valid JSON/],
  ['a config with a bad field', () => ['run', file('f.json', JSON.stringify({ version: 1, weight: { topK: -1 } }))], 2, /invalid run config .*\n\s+- weight\.topK: Too small/],
  ['a config of an unknown version', () => ['start', file('v.json', JSON.stringify({ version: 2 }))], 2, /version: 2 is not a config version this release knows; use "version": 1/],
  ['an unknown preset', () => ['run', '--preset', 'nonsense'], 2, /unknown preset 'nonsense'; presets: .*math-weights-only/],
  ['both a file and a preset', () => ['run', file('ok.json', '{"version":1}'), '--preset', 'demo'], 2, /either a run config file or --preset, not both/],
  ['neither a file nor a preset', () => ['run'], 2, /give a run config file or --preset <name>/],
  ['an unknown worker queue', () => ['worker', '--queue', 'gpu'], 2, /--queue must be one of orchestration, model, proposer; got 'gpu'/],
  ['audit without a run', () => ['audit'], 2, /give a workflow id, or --history/],
  ['audit of a file that is not a history', () => ['audit', '--history', file('h.json', '{"hello": 1}')], 1, /is not a workflow history exported with `temporal workflow show --output json`/],
  ['an unreachable server', () => ['status', 'some-run'], 1, /cannot reach the Temporal server at 127\.0\.0\.1:1.*Start one with `whale dev`/],
];

describe('bad input at the CLI', () => {
  for (const [name, args, code, message] of cases) {
    it(`rejects ${name}`, () => {
      const r = whale(...args());
      assert.equal(r.status, code, r.stdout + r.stderr);
      assert.match(r.stderr, message);
    });
  }
});
