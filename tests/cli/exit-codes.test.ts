// Exit codes of the CLI as a script sees them: `--version` prints package.json's version, help exits 0,
// every usage error exits 2 (commander's own parse errors too: an unknown option or command, a missing
// argument or required option, no command at all), and a failure that is not the caller's mistake exits 1.
// No server is needed (an unused address: nothing may reach one).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Runs `whale <args>` to its end; asynchronous, so the cases run side by side (each start loads the CLI). */
function whale(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], { encoding: 'utf8', env: { ...process.env, WHALE_TEMPORAL_ADDRESS: '127.0.0.1:1' } }, (_err, out, err) => {
      resolve({ code: child.exitCode, out, err });
    });
  });
}

describe('CLI exit codes', { concurrency: 4 }, () => {
  it('--version and -V print the version from package.json and exit 0', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await whale([flag]);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out.trim(), version);
    }
  });

  it('help exits 0', async () => {
    for (const args of [['--help'], ['status', '--help'], ['help', 'status']]) {
      const r = await whale(args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.err}`);
      assert.match(r.out, /Usage: whale/);
    }
  });

  const usage: [string[], RegExp][] = [
    [['status', '--bogus'], /error: unknown option '--bogus'/],
    [['frobnicate'], /error: unknown command 'frobnicate'/],
    [['status'], /error: missing required argument 'workflowId'/],
    [['worker'], /error: required option '--queue <kind>' not specified/],
    [['agent', 'run', 'some-bundle'], /error: missing required argument 'task'/],
    [['list', '--limit'], /error: option '--limit <n>' argument missing/],
    [[], /Usage: whale/],
    // The project's own usage errors, as before.
    [['worker', '--queue', 'gpu'], /--queue must be one of/],
    // The agent commands' usage errors are UsageErrors too (they exited 1 while they had a class of their own).
    [['agent', 'export', 'some-run', '--which', 'latest'], /--which must be final or best; got 'latest'/],
  ];
  for (const [args, message] of usage) {
    it(`exits 2 for a usage error: whale ${args.join(' ') || '(no command)'}`, async () => {
      const r = await whale(args);
      assert.equal(r.code, 2, `stdout: ${r.out}\nstderr: ${r.err}`);
      assert.match(r.err, message);
    });
  }

  it('exits 1 for a failure that is not a usage error (no server at the address)', async () => {
    const r = await whale(['status', 'some-run']);
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /cannot reach the Temporal server/);
  });
});
