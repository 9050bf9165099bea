// The worker commands exactly as README.md and docs/operations.md write them (`node bin/whale.js worker
// --queue orchestration|model|proposer`, run from the project folder) against a real dev server that
// `whale dev --no-workers` started: each one reaches "polling" and stops on Ctrl-C. A worker started before
// its server waits for it (saying for what) and connects once it is up; with no server it gives up after
// --connect-timeout-ms with the clear message.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { freePort, ROOT, waitFor } from '../workflows/env';

const work = mkdtempSync(path.join(tmpdir(), 'whale-worker-cmd-'));
const children = new Set<ChildProcess>();

interface Proc { child: ChildProcess; output: () => string }

/** `node <args>` from the project folder, as a user types the README's commands; output collected. */
function start(args: string[], env: NodeJS.ProcessEnv): Proc {
  let out = '';
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  children.add(child);
  child.once('exit', () => children.delete(child));
  return { child, output: () => out };
}

/** Ctrl-C, then the exit code (a graceful stop: the worker drains, then exits). */
async function interrupt(p: Proc): Promise<number | null> {
  if (p.child.exitCode !== null) return p.child.exitCode;
  const exited = new Promise<number | null>((r) => p.child.once('exit', (code) => r(code)));
  p.child.kill('SIGINT');
  return exited;
}

/** A dev server of its own (port, database), started with `whale dev --headless --no-workers`. */
async function devServer(port: number, name: string): Promise<{ env: NodeJS.ProcessEnv; proc: Proc }> {
  const env = {
    WHALE_TEMPORAL_ADDRESS: `127.0.0.1:${port}`, WHALE_DEV_PORT: String(port), WHALE_DEV_UI_PORT: String(port + 1),
    WHALE_DEV_DATA_DIR: path.join(work, `${name}-temporal`), WHALE_ARTIFACT_DIR: path.join(work, 'artifacts'),
  };
  const proc = start([path.join('bin', 'whale.js'), 'dev', '--headless', '--no-workers'], env);
  await waitFor('whale dev --no-workers to be ready', async () => {
    if (proc.child.exitCode !== null) throw new Error(`whale dev exited early:\n${proc.output()}`);
    return proc.output().includes('press Ctrl-C') ? true : undefined;
  }, 120_000);
  return { env, proc };
}

after(async () => {
  // Whatever a failed test left running; then the folder.
  await Promise.all([...children].map((c) => interrupt({ child: c, output: () => '' })));
  rmSync(work, { recursive: true, force: true });
});

describe('whale worker, as the docs write it', () => {
  it('node bin/whale.js worker --queue orchestration|model|proposer each reach polling, and stop on Ctrl-C', async () => {
    const server = await devServer(await freePort(), 'a');
    try {
      const workers = (['orchestration', 'model', 'proposer'] as const).map((kind) => ({ kind, proc: start(['bin/whale.js', 'worker', '--queue', kind], server.env) }));
      for (const { kind, proc } of workers) {
        await waitFor(`the ${kind} worker to poll`, async () => {
          if (proc.child.exitCode !== null) throw new Error(`whale worker --queue ${kind} exited with ${proc.child.exitCode}:\n${proc.output()}`);
          return proc.output().includes(`[whale] ${kind} worker polling 'whale-${kind}' at ${server.env.WHALE_TEMPORAL_ADDRESS}`) ? true : undefined;
        }, 180_000);
      }
      for (const { kind, proc } of workers) {
        assert.doesNotMatch(proc.output(), /Cannot find module|ERR_MODULE_NOT_FOUND/, kind);
        assert.equal(await interrupt(proc), 0, `${kind} worker exit code on Ctrl-C:\n${proc.output()}`);
      }
    } finally {
      assert.equal(await interrupt(server.proc), 0, server.proc.output());
    }
  });

  it('a worker started before its server waits for it, saying for what, and connects when it comes up', async () => {
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const worker = start(['bin/whale.js', 'worker', '--queue', 'orchestration', '--connect-timeout-ms', '300000'], { WHALE_TEMPORAL_ADDRESS: address, WHALE_ARTIFACT_DIR: path.join(work, 'artifacts') });
    await waitFor('the worker to say it waits', async () => {
      if (worker.child.exitCode !== null) throw new Error(`the worker exited instead of waiting:\n${worker.output()}`);
      return worker.output().includes(`[whale] orchestration worker waiting for the Temporal server at ${address} (namespace default)`) ? true : undefined;
    }, 60_000);
    const server = await devServer(port, 'b');
    try {
      await waitFor('the waiting worker to connect and poll', async () => {
        if (worker.child.exitCode !== null) throw new Error(`the worker exited:\n${worker.output()}`);
        return worker.output().includes(`[whale] orchestration worker polling 'whale-orchestration' at ${address}`) ? true : undefined;
      }, 120_000);
      assert.equal(await interrupt(worker), 0, worker.output());
    } finally {
      await interrupt(server.proc);
    }
  });

  it('with no server it gives up after --connect-timeout-ms with the clear message; a bad value is a usage error', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const env = { ...process.env, WHALE_TEMPORAL_ADDRESS: address };
    const t0 = Date.now();
    const r = spawnSync(process.execPath, ['bin/whale.js', 'worker', '--queue', 'orchestration', '--connect-timeout-ms', '2000'], { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`waiting for the Temporal server at ${address.replace(/\./g, '\\.')} \\(namespace default\\)`));
    assert.match(r.stderr, new RegExp(`cannot reach the Temporal server at ${address.replace(/\./g, '\\.')} .*\\(waited \\d+ s; --connect-timeout-ms or WHALE_WORKER_CONNECT_TIMEOUT_MS sets how long\\)\\. Start one with \`whale dev\``));
    assert.ok(Date.now() - t0 >= 2000, 'it waited');
    const bad = spawnSync(process.execPath, ['bin/whale.js', 'worker', '--queue', 'model', '--connect-timeout-ms', 'soon'], { cwd: ROOT, env, encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--connect-timeout-ms must be a whole number of milliseconds >= 0 .*got 'soon'/);
    const badEnv = spawnSync(process.execPath, ['bin/whale.js', 'worker', '--queue', 'model'], { cwd: ROOT, env: { ...env, WHALE_WORKER_CONNECT_TIMEOUT_MS: '1m' }, encoding: 'utf8' });
    assert.equal(badEnv.status, 2);
    assert.match(badEnv.stderr, /WHALE_WORKER_CONNECT_TIMEOUT_MS must be a whole number of milliseconds/);
  });
});
