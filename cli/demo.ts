// `whale demo`: the main job on the embedded default. Starts a dev server (unless one answers already) and
// the workers this release implements, starts the demo run, follows it with a progress line, and stops what
// it started. While the model worker's activities are not implemented, the run is shown waiting durably in
// the model queue (what every run does during preemption) and the demo ends there.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { IMPLEMENTED_WORKER_KINDS } from '../workers/main';
import { serverAnswers, startDevServer, stopChild } from './dev-server';
import { describeRun, formatStatus } from './status';
import { PROJECT_ROOT } from './paths';

export const DEMO_CONFIG = { version: 1, name: 'demo', method: 'whale-fixed', domain: 'math', seed: 0 } as const;

async function pollUntil<T>(fn: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)}s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

export async function runDemo(out: NodeJS.WritableStream = process.stdout): Promise<void> {
  const config = loadTemporalConfig();
  const started: ChildProcess[] = [];
  let server: ChildProcess | null = null;
  if (!serverAnswers(config)) {
    out.write(`[demo] starting the Temporal dev server at ${config.address} (Web UI http://${config.devServer.ip}:${config.devServer.uiPort})\n`);
    server = await startDevServer({ config, quiet: true });
  } else {
    out.write(`[demo] using the Temporal server already at ${config.address}\n`);
  }
  try {
    const logDir = path.resolve(PROJECT_ROOT, '.data', 'logs');
    mkdirSync(logDir, { recursive: true });
    for (const kind of IMPLEMENTED_WORKER_KINDS) {
      const log = openSync(path.join(logDir, `worker-${kind}.log`), 'a');
      started.push(fork(path.join(PROJECT_ROOT, 'workers', 'main.ts'), [kind], { execArgv: ['--import', 'tsx'], stdio: ['ignore', log, log, 'ipc'] }));
    }
    out.write(`[demo] workers: ${IMPLEMENTED_WORKER_KINDS.join(', ')} (logs in .data/logs/)\n`);
    const client = await connectClient(config);
    const workflowId = `whale-demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    await client.workflow.start('whaleRun', { taskQueue: config.taskQueues.orchestration, workflowId, args: [DEMO_CONFIG] });
    out.write(`[demo] started run ${workflowId}: ${JSON.stringify(DEMO_CONFIG)}\n`);
    await follow(client, workflowId, out);
  } finally {
    await Promise.all(started.map((c) => stopChild(c, 40_000)));
    if (server) await stopChild(server, 15_000);
  }
}

async function follow(client: Client, workflowId: string, out: NodeJS.WritableStream): Promise<void> {
  if (!IMPLEMENTED_WORKER_KINDS.includes('model')) {
    const view = await pollUntil(async () => {
      const v = await describeRun(client, workflowId);
      return v.pending.length > 0 ? v : undefined;
    }, 120_000, 'the run to schedule its first activity');
    out.write(formatStatus(view) + '\n');
    out.write('[demo] this release has no model worker yet: the run waits, durably, in the model queue. It stays in the\n' +
      '[demo] dev server\'s database (.data/temporal); once a model worker serves the queue, it continues where it waits.\n');
    return;
  }
  const handle = client.workflow.getHandle(workflowId);
  const result = await handle.result();
  out.write(`[demo] finished: ${JSON.stringify(result)}\n`);
}
