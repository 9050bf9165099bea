// Real processes for the scale-out tests: a dev server on its own port and data folder, any number of
// workers of each kind (each its own `node` process with its own environment), and `whale serve` instances.
// Every process is tracked by its pid, so a test kills exactly the one it means to.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { loadTemporalConfig, type TemporalConfig } from '../temporal.config';
import { startDevServer, stopChild } from '../cli/dev-server';
import { connectClient } from '../workers/connection';
import { freePort, ROOT, waitFor } from './env';

export interface ScaleCluster {
  config: TemporalConfig;
  dir: string;
  artifactDir: string;
  client: Client;
  env: Record<string, string>;
  /** Starts one worker process; `name` labels its log file (worker-<name>.log in dir). */
  startWorker(kind: 'orchestration' | 'model' | 'proposer', name: string, extraEnv?: Record<string, string>): ChildProcess;
  /** Starts `whale serve` and resolves with its base URL (…/v1) once it listens. */
  startServe(args: string[]): Promise<{ child: ChildProcess; url: string }>;
  log(name: string): string;
  /** CPU seconds used so far by every live tracked process and the children it has reaped (Linux /proc). */
  cpuSeconds(): number;
  kill(child: ChildProcess, signal?: NodeJS.Signals): Promise<void>;
  teardown(): Promise<void>;
}

export async function startScaleCluster(): Promise<ScaleCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'whale-scale-'));
  // A port the OS says is free (fixed ranges collide with other clusters on a shared machine).
  const port = await freePort();
  const env = {
    WHALE_TEMPORAL_ADDRESS: `127.0.0.1:${port}`, WHALE_DEV_PORT: String(port), WHALE_DEV_UI_PORT: String(port + 1),
    WHALE_DEV_DATA_DIR: path.join(dir, 'temporal'), WHALE_ARTIFACT_DIR: path.join(dir, 'artifacts'),
  };
  const config = loadTemporalConfig({}, { ...process.env, ...env });
  const server = await startDevServer({ config, headless: true, quiet: true });
  const client = await connectClient(config);
  const children = new Set<ChildProcess>();
  const track = (child: ChildProcess) => {
    children.add(child);
    child.once('exit', () => children.delete(child));
    return child;
  };
  const cluster: ScaleCluster = {
    config, dir, client, env, artifactDir: env.WHALE_ARTIFACT_DIR,
    startWorker(kind, name, extraEnv = {}) {
      const log = openSync(path.join(dir, `worker-${name}.log`), 'a');
      return track(spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'workers', 'main.ts'), kind], { env: { ...process.env, ...env, ...extraEnv }, stdio: ['ignore', log, log] }));
    },
    async startServe(args) {
      const logFile = path.join(dir, `serve-${children.size}.log`);
      const log = openSync(logFile, 'a');
      const child = track(spawn(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), 'serve', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', log, log] }));
      const url = await waitFor(`whale serve to listen (${logFile})`, async () => {
        if (child.exitCode !== null) throw new Error(`whale serve exited (${child.exitCode}): ${readFileSync(logFile, 'utf8')}`);
        return /at (http:\/\/\S+\/v1)/.exec(readFileSync(logFile, 'utf8'))?.[1];
      }, 180_000);
      return { child, url };
    },
    cpuSeconds() {
      let ticks = 0;
      for (const child of [server, ...children]) {
        try {
          // Fields 14-17 of /proc/<pid>/stat: utime, stime, cutime, cstime (after the parenthesised name).
          const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
          ticks += fields.slice(11, 15).reduce((a, f) => a + Number(f), 0);
        } catch {
          // exited, or not Linux
        }
      }
      return ticks / 100;
    },
    log(name) {
      try {
        return readFileSync(path.join(dir, `worker-${name}.log`), 'utf8');
      } catch {
        return '';
      }
    },
    async kill(child, signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill(signal);
      await exited;
    },
    async teardown() {
      for (const child of [...children]) await cluster.kill(child);
      await stopChild(server, 15_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

export { activityResults } from './fault-cluster';
