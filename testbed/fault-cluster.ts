// Real processes for fault injection (tests, the soak, benches): a dev server on its own port and data folder,
// and workers as separate `node` processes (one per task queue) that a caller can SIGKILL and restart.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { loadTemporalConfig, type TemporalConfig } from '../temporal.config';
import { startDevServer, stopChild } from '../cli/dev-server';
import { connectClient } from '../workers/connection';
import { freePort, ROOT } from './env';

export type WorkerKind = 'orchestration' | 'model' | 'proposer';

export interface FaultCluster {
  config: TemporalConfig;
  dir: string;
  client: Client;
  server: ChildProcess;
  workers: Map<string, ChildProcess>;
  /** The environment every process of the cluster gets (address, ports, data and artifact folders). */
  env: Record<string, string>;
  startWorker(kind: WorkerKind, extraEnv?: Record<string, string>): ChildProcess;
  kill(kind: string, signal?: NodeJS.Signals): Promise<void>;
  /** Kills the dev server (SIGKILL by default); its database stays in `dir`. */
  killServer(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the dev server again on the same database (same port) and reconnects nothing: clients and workers retry. */
  restartServer(): Promise<void>;
  teardown(): Promise<void>;
}

export interface FaultClusterOptions {
  /** Dev server port (the UI takes port + 1); default a port the OS says is free (test files run side by side). */
  port?: number;
  /** Environment for every worker (e.g. model threads), below startWorker's extraEnv. */
  workerEnv?: Record<string, string>;
  /** Start workers through testbed/journal-worker.ts, which appends activity progress to this file. */
  journal?: string;
  /** Keep the temp folder (logs, database, artifacts) after teardown. */
  keepDir?: boolean;
}

export async function startFaultCluster(opts: FaultClusterOptions = {}): Promise<FaultCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'whale-faults-'));
  const port = opts.port ?? (await freePort());
  const env: Record<string, string> = {
    WHALE_TEMPORAL_ADDRESS: `127.0.0.1:${port}`, WHALE_DEV_PORT: String(port), WHALE_DEV_UI_PORT: String(port + 1),
    WHALE_DEV_DATA_DIR: path.join(dir, 'temporal'), WHALE_ARTIFACT_DIR: path.join(dir, 'artifacts'),
    ...(opts.journal ? { WHALE_FAULT_JOURNAL: opts.journal } : {}),
  };
  const config = loadTemporalConfig({}, { ...process.env, ...env });
  const server = await startDevServer({ config, headless: true, quiet: true });
  const client = await connectClient(config);
  const workers = new Map<string, ChildProcess>();
  const entry = opts.journal ? path.join(ROOT, 'testbed', 'journal-worker.ts') : path.join(ROOT, 'workers', 'main.ts');
  let n = 0;
  const cluster: FaultCluster = {
    config, dir, client, server, workers, env,
    startWorker(kind, extraEnv = {}) {
      const log = openSync(path.join(dir, `worker-${kind}-${n++}.log`), 'a');
      const child = spawn(process.execPath, ['--import', 'tsx', entry, kind], {
        env: { ...process.env, ...env, ...opts.workerEnv, ...extraEnv }, stdio: ['ignore', log, log],
      });
      closeSync(log);
      workers.set(kind, child);
      return child;
    },
    async kill(kind, signal = 'SIGKILL') {
      const child = workers.get(kind);
      if (!child || child.exitCode !== null || child.signalCode !== null) {
        workers.delete(kind);
        return;
      }
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill(signal);
      await exited;
      workers.delete(kind);
    },
    async killServer(signal = 'SIGKILL') {
      const s = cluster.server;
      if (s.exitCode !== null || s.signalCode !== null) return;
      const exited = new Promise<void>((r) => s.once('exit', () => r()));
      s.kill(signal);
      await exited;
    },
    async restartServer() {
      cluster.server = await startDevServer({ config, headless: true, quiet: true });
    },
    async teardown() {
      for (const kind of [...workers.keys()]) await cluster.kill(kind);
      await stopChild(cluster.server, 15_000);
      if (!opts.keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

/** Decoded results of every completed activity of a type, in history order (all runs of the chain). */
export async function activityResults<T>(client: Client, workflowId: string, activityType: string): Promise<T[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const scheduled = new Map<string, string>();
  const out: T[] = [];
  for (const e of history.events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) scheduled.set(String(e.eventId), s.activityType?.name ?? '');
    const c = e.activityTaskCompletedEventAttributes;
    if (c && scheduled.get(String(c.scheduledEventId)) === activityType) {
      const data = c.result?.payloads?.[0]?.data;
      if (data) out.push(JSON.parse(Buffer.from(data).toString('utf8')) as T);
    }
  }
  return out;
}

/** The largest payload (activity input or result, workflow input, continue-as-new input) in a run's history. */
export async function largestPayload(client: Client, workflowId: string): Promise<{ bytes: number; where: string }> {
  let best = { bytes: 0, where: 'none' };
  for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await client.workflow.getHandle(workflowId, w.runId).fetchHistory();
    for (const e of history.events ?? []) {
      const groups: [string, { payloads?: { data?: Uint8Array | null }[] | null } | null | undefined][] = [
        ['workflow input', e.workflowExecutionStartedEventAttributes?.input],
        ['activity input', e.activityTaskScheduledEventAttributes?.input],
        ['activity result', e.activityTaskCompletedEventAttributes?.result],
        ['continue-as-new input', e.workflowExecutionContinuedAsNewEventAttributes?.input],
        ['workflow result', e.workflowExecutionCompletedEventAttributes?.result],
      ];
      for (const [where, p] of groups) {
        for (const payload of p?.payloads ?? []) {
          const bytes = payload.data?.byteLength ?? 0;
          if (bytes > best.bytes) best = { bytes, where: `${where} (event ${String(e.eventId)})` };
        }
      }
    }
  }
  return best;
}
