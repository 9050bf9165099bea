// End-to-end through real processes: `whale dev` (dev server + orchestration worker), runs started with the
// real `temporal` CLI from a JSON file, `whale status` while the run waits for a model worker, a malformed
// input failing at once, and the server killed and restarted on the same database.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { freePort, ROOT, temporalBinary, waitFor } from '../workflows/env';

// Ports the OS says are free (other test files run side by side with their own servers); set in before().
let ADDRESS = '';
let env: NodeJS.ProcessEnv = {};
const dataDir = mkdtempSync(path.join(tmpdir(), 'whale-dev-'));

function temporal(args: string[]) {
  return spawnSync(temporalBinary(), [...args, '--address', ADDRESS], { encoding: 'utf8' });
}
function whale(args: string[]) {
  return spawnSync(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], { encoding: 'utf8', env });
}

let dev: ChildProcess | null = null;
let devOutput = '';
async function startDev(): Promise<void> {
  devOutput = '';
  // Only the orchestration worker: runs must wait in the model queue, as during preemption.
  dev = spawn(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), 'dev', '--headless', '--workers', 'orchestration'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  dev.stdout?.on('data', (d: Buffer) => (devOutput += d.toString()));
  dev.stderr?.on('data', (d: Buffer) => (devOutput += d.toString()));
  await waitFor('whale dev to be ready', async () => (devOutput.includes('press Ctrl-C') ? true : undefined), 90_000);
}
async function stopDev(signal: NodeJS.Signals = 'SIGINT'): Promise<number | null> {
  const p = dev;
  dev = null;
  if (!p || p.exitCode !== null) return p?.exitCode ?? null;
  const exited = new Promise<number | null>((r) => p.once('exit', (code) => r(code)));
  p.kill(signal);
  return exited;
}

before(async () => {
  const port = await freePort();
  ADDRESS = `127.0.0.1:${port}`;
  env = { ...process.env, WHALE_DEV_PORT: String(port), WHALE_DEV_UI_PORT: String(port + 1), WHALE_TEMPORAL_ADDRESS: ADDRESS, WHALE_DEV_DATA_DIR: dataDir };
  await startDev();
});
after(async () => {
  await stopDev();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('whale dev and the temporal CLI', () => {
  it('starts the server with the project search attributes and a long retention', () => {
    assert.match(devOutput, new RegExp(`Temporal dev server at ${ADDRESS.replace(/\./g, '\\.')}`));
    const ns = temporal(['operator', 'namespace', 'describe', '--namespace', 'default', '--output', 'json']);
    assert.equal(ns.status, 0, ns.stderr);
    assert.match(ns.stdout, /"workflowExecutionRetentionTtl":\s*"2592000s"/);
    const sa = temporal(['operator', 'search-attribute', 'list']);
    for (const name of ['WhalePhase', 'WhaleStep', 'WhaleBestScore', 'WhaleRollouts']) assert.match(sa.stdout, new RegExp(name));
  });

  it('a run started from a JSON file waits for a model worker, visible in whale status and describe', async () => {
    const file = path.join(dataDir, 'run.json');
    writeFileSync(file, JSON.stringify({ version: 1, method: 'weights-only', domain: 'math', budget: { totalWeightSteps: 2 } }));
    const start = temporal(['workflow', 'start', '--type', 'whaleRun', '--task-queue', 'whale-orchestration', '--workflow-id', 'cli-run-1', '--input-file', file]);
    assert.equal(start.status, 0, start.stderr);
    const status = await waitFor('whale status to show the wait', async () => {
      const r = whale(['status', 'cli-run-1']);
      return r.status === 0 && r.stdout.includes('waiting on:') ? r.stdout : undefined;
    });
    assert.match(status, /status:\s+RUNNING/);
    assert.match(status, /waiting on:\s+prepareRun .* in task queue 'whale-model' \(no worker is polling it/);
    const describe = temporal(['workflow', 'describe', '-w', 'cli-run-1']);
    assert.match(describe.stdout, /Pending Activities: 1/);
    assert.match(describe.stdout, /prepareRun/);
  });

  it('a malformed input file fails the run at once with a readable, non-retryable error', async () => {
    const file = path.join(dataDir, 'bad.json');
    writeFileSync(file, JSON.stringify({ version: 1, method: 'whale-adaptive', switching: { kind: 'fixed' }, budget: { totalWeightSteps: 'ten' } }));
    const start = temporal(['workflow', 'start', '--type', 'whaleRun', '--task-queue', 'whale-orchestration', '--workflow-id', 'cli-bad-1', '--input-file', file]);
    assert.equal(start.status, 0, start.stderr);
    const result = await waitFor('the malformed run to fail', async () => {
      const r = temporal(['workflow', 'describe', '-w', 'cli-bad-1', '--output', 'json']);
      return /WORKFLOW_EXECUTION_STATUS_FAILED/.test(r.stdout) ? r : undefined;
    });
    assert.ok(result);
    const shown = temporal(['workflow', 'result', '-w', 'cli-bad-1']);
    const text = shown.stdout + shown.stderr;
    assert.match(text, /invalid run config/);
    assert.match(text, /budget\.totalWeightSteps/);
    assert.match(text, /whale-adaptive/);
  });

  it('keeps runs across a killed and restarted server (same database)', async () => {
    const serverPid = Number(spawnSync('pgrep', ['-f', `start-dev .*--db-filename ${dataDir}`], { encoding: 'utf8' }).stdout.trim().split('\n')[0]);
    assert.ok(serverPid > 0, 'the dev server process must be found');
    process.kill(serverPid, 'SIGKILL');
    const code = await waitFor('whale dev to notice and exit', async () => (dev && dev.exitCode !== null ? dev.exitCode : undefined), 60_000);
    assert.equal(code, 1, 'whale dev exits non-zero when its server dies');
    dev = null;
    await startDev();
    const list = temporal(['workflow', 'list']);
    assert.match(list.stdout, /cli-run-1/);
    assert.match(list.stdout, /cli-bad-1/);
    const status = whale(['status', 'cli-run-1']);
    assert.match(status.stdout, /status:\s+RUNNING/);
  });

  it('stops everything cleanly on Ctrl-C', async () => {
    const code = await stopDev('SIGINT');
    assert.equal(code, 0);
    assert.match(devOutput, /\[whale\] stopped/);
    const health = temporal(['operator', 'cluster', 'health', '--command-timeout', '2s']);
    assert.notEqual(health.status, 0, 'the server must be gone');
  });
});
