// A real, private WHALE installation for product tests: `whale dev --headless` (dev server + orchestration,
// model and proposer workers as child processes) on its own port, database and artifact store, and the
// `whale` CLI run against it as a separate process, exactly as a user runs it.
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { freePort, ROOT, waitFor } from '../../testbed/env';

export interface ProductCluster {
  dir: string;
  env: NodeJS.ProcessEnv;
  artifactDir: string;
  /** Runs `whale <args>` to completion (cwd: the cluster's folder unless given). */
  whale(args: string[], opts?: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv }): SpawnSyncReturns<string>;
  /** Stops the dev server and workers (Ctrl-C); the folder stays until teardown. */
  stop(): Promise<void>;
  teardown(): Promise<void>;
  output(): string;
}

export async function startProductCluster(prefix: string): Promise<ProductCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), `whale-${prefix}-`));
  // A port the OS says is free (fixed ranges collide with other clusters on a shared machine).
  const port = await freePort();
  const artifactDir = path.join(dir, 'artifacts');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    WHALE_TEMPORAL_ADDRESS: `127.0.0.1:${port}`, WHALE_DEV_PORT: String(port), WHALE_DEV_UI_PORT: String(port + 1),
    WHALE_DEV_DATA_DIR: path.join(dir, 'temporal'), WHALE_ARTIFACT_DIR: artifactDir,
    // One sampler thread: the run's numbers and a bundle's replay of them use the same kernels.
    WHALE_MODEL_THREADS: '1',
  };
  let out = '';
  let dev: ChildProcess | null = spawn(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), 'dev', '--headless'], { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  dev.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  dev.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const stop = async () => {
    const p = dev;
    dev = null;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGINT');
    await exited;
  };
  try {
    await waitFor('whale dev to be ready', async () => {
      if (dev?.exitCode !== null) throw new Error(`whale dev exited early:\n${out}`);
      // Ready when the server is up and all three workers poll (a worker that dies at start shows here).
      const polling = ['orchestration', 'model', 'proposer'].every((k) => out.includes(`[whale] ${k} worker polling`));
      return out.includes('press Ctrl-C') && polling ? true : undefined;
    }, 600_000);
  } catch (err) {
    await stop();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(err as Error).message}\n--- whale dev output ---\n${out.slice(-4000)}`);
  }
  return {
    dir, env, artifactDir,
    whale: (args, opts = {}) => {
      // The CLI gives up connecting after 5 s; on a machine loaded far past its cores that can happen while
      // the server is up. It fails before doing anything then, so trying again is safe.
      for (let attempt = 1; ; attempt++) {
        const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], {
          encoding: 'utf8', env: { ...env, ...opts.env }, cwd: opts.cwd ?? dir, timeout: opts.timeoutMs ?? 900_000,
        });
        if (r.status === 0 || attempt >= 5 || !/cannot reach the Temporal server .*Failed to connect/.test(r.stderr) || dev === null) return r;
      }
    },
    stop,
    async teardown() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    output: () => out,
  };
}

/** Fails with the command's output (and the end of the cluster's own output) when it did not exit 0. */
export function ok(r: SpawnSyncReturns<string>, what: string, cluster?: ProductCluster): string {
  if (r.status !== 0) {
    const tail = cluster ? `\n--- whale dev output (end) ---\n${cluster.output().slice(-4000)}` : '';
    throw new Error(`${what} exited ${r.status}${r.signal ? ` (${r.signal})` : ''}:\n${r.stdout}\n${r.stderr}${tail}`);
  }
  return r.stdout;
}
