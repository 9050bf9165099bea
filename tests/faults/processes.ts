// Real processes for fault-injection tests: a dev server on its own port and data folder, and workers as
// separate `node` processes (one per task queue) that a test can SIGKILL and restart.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { loadTemporalConfig, type TemporalConfig } from '../../temporal.config';
import { startDevServer, stopChild } from '../../cli/dev-server';
import { connectClient } from '../../workers/connection';
import { ROOT } from '../workflows/env';

export interface FaultCluster {
  config: TemporalConfig;
  dir: string;
  client: Client;
  server: ChildProcess;
  workers: Map<string, ChildProcess>;
  startWorker(kind: 'orchestration' | 'model' | 'proposer', extraEnv?: Record<string, string>): ChildProcess;
  kill(kind: string, signal?: NodeJS.Signals): Promise<void>;
  teardown(): Promise<void>;
}

export async function startFaultCluster(): Promise<FaultCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'whale-faults-'));
  const port = 20000 + (process.pid % 4000);
  const env = {
    WHALE_TEMPORAL_ADDRESS: `127.0.0.1:${port}`, WHALE_DEV_PORT: String(port), WHALE_DEV_UI_PORT: String(port + 1),
    WHALE_DEV_DATA_DIR: path.join(dir, 'temporal'), WHALE_ARTIFACT_DIR: path.join(dir, 'artifacts'),
  };
  const config = loadTemporalConfig({}, { ...process.env, ...env });
  const server = await startDevServer({ config, headless: true, quiet: true });
  const client = await connectClient(config);
  const workers = new Map<string, ChildProcess>();
  let n = 0;
  const cluster: FaultCluster = {
    config, dir, client, server, workers,
    startWorker(kind, extraEnv = {}) {
      const log = openSync(path.join(dir, `worker-${kind}-${n++}.log`), 'a');
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'workers', 'main.ts'), kind], {
        env: { ...process.env, ...env, ...extraEnv }, stdio: ['ignore', log, log],
      });
      workers.set(kind, child);
      return child;
    },
    async kill(kind, signal = 'SIGKILL') {
      const child = workers.get(kind);
      if (!child || child.exitCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill(signal);
      await exited;
      workers.delete(kind);
    },
    async teardown() {
      for (const kind of [...workers.keys()]) await cluster.kill(kind);
      await stopChild(server, 15_000);
      rmSync(dir, { recursive: true, force: true });
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
