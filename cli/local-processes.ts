// The processes a local run needs, started the same way by `whale dev`, `whale demo` and `whale bench compare`:
// the Temporal dev server when none answers, worker processes (workers/main.ts under tsx), and their stopping.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { TemporalConfig } from '../temporal.config';
import type { WorkerKind } from '../workers/main';
import { serverAnswers, startDevServer, stopChild } from './dev-server';
import { PROJECT_ROOT } from './paths';

/** Where started workers append their output when it does not go to the terminal. */
export const LOG_DIR = path.join('.data', 'logs');

/**
 * Forks one worker process. `log`: a file name under .data/logs/ its stdout and stderr are appended to;
 * without it the worker writes to this process's terminal.
 */
export function forkWorker(kind: WorkerKind, log?: string): ChildProcess {
  const entry = path.join(PROJECT_ROOT, 'workers', 'main.ts');
  const execArgv = ['--import', 'tsx'];
  if (log === undefined) return fork(entry, [kind], { execArgv, stdio: 'inherit', cwd: PROJECT_ROOT });
  const dir = path.resolve(PROJECT_ROOT, LOG_DIR);
  mkdirSync(dir, { recursive: true });
  const fd = openSync(path.join(dir, log), 'a');
  return fork(entry, [kind], { execArgv, stdio: ['ignore', fd, fd, 'ipc'], cwd: PROJECT_ROOT });
}

export interface WorkerSpec { kind: WorkerKind; count: number }

/**
 * Forks `count` workers of each kind. With `logPrefix`, each logs to .data/logs/<prefix>-<kind>[-<i>].log
 * (the index only when a kind has more than one); without it, all write to the terminal.
 */
export function startWorkers(specs: readonly WorkerSpec[], logPrefix?: string): ChildProcess[] {
  const started: ChildProcess[] = [];
  for (const { kind, count } of specs) {
    for (let i = 0; i < count; i++) started.push(forkWorker(kind, logPrefix === undefined ? undefined : `${logPrefix}-${kind}${count > 1 ? `-${i}` : ''}.log`));
  }
  return started;
}

/** Starts the dev server unless one answers at the configured address; returns it (null when one was there). */
export async function ensureDevServer(config: TemporalConfig, log: (line: string) => void, opts: { headless?: boolean } = {}): Promise<ChildProcess | null> {
  if (serverAnswers(config)) {
    log(`using the Temporal server already at ${config.address}`);
    return null;
  }
  log(`no Temporal server answers at ${config.address}: starting the dev server (data in ${config.devServer.dataDir}${opts.headless ? '' : `, Web UI http://${config.devServer.ip}:${config.devServer.uiPort}`})`);
  return startDevServer({ config, headless: opts.headless, quiet: true });
}

/** Stops the workers (a step in flight gets 40 s to finish), then the server if this process started it. */
export async function stopProcesses(workers: readonly ChildProcess[], server: ChildProcess | null): Promise<void> {
  await Promise.all(workers.map((c) => stopChild(c, 40_000)));
  if (server) await stopChild(server, 15_000);
}

const millis = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number => (t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : NaN);

/**
 * How long after its last poll a poller counts as live. The server lists a poller for minutes after its worker
 * died, with the time of its last poll: a live idle worker polls again each time its long poll ends (measured on
 * the dev server, Temporal 1.32: at most about 55 s apart), a killed one never does. 70 s keeps every live worker
 * and drops a dead one at most 70 s after its last poll (two minutes, as before, left a resumed bench waiting).
 */
export const POLLER_LIVE_MS = 70_000;

/** Pollers of a task queue that polled within `liveMs`. */
export async function livePollers(client: Client, name: string, type: temporal.api.enums.v1.TaskQueueType, liveMs = POLLER_LIVE_MS): Promise<number> {
  const res = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name }, taskQueueType: type });
  const recent = Date.now() - liveMs;
  return (res.pollers ?? []).filter((p) => millis(p.lastAccessTime as never) >= recent).length;
}

/** The worker kinds whose task queue no live poller polls now (`liveMs`: see POLLER_LIVE_MS). */
export async function unpolledKinds(client: Client, config: TemporalConfig, liveMs = POLLER_LIVE_MS): Promise<WorkerKind[]> {
  // Loaded here: `whale dev` and `whale demo` import this file, and their --help needs no protobuf root.
  const T = (require('@temporalio/proto') as typeof import('@temporalio/proto')).temporal.api.enums.v1.TaskQueueType;
  const queues: [WorkerKind, string, temporal.api.enums.v1.TaskQueueType][] = [
    ['orchestration', config.taskQueues.orchestration, T.TASK_QUEUE_TYPE_WORKFLOW],
    ['model', config.taskQueues.model, T.TASK_QUEUE_TYPE_ACTIVITY],
    ['proposer', config.taskQueues.proposer, T.TASK_QUEUE_TYPE_ACTIVITY],
  ];
  const idle: WorkerKind[] = [];
  for (const [kind, queue, type] of queues) if ((await livePollers(client, queue, type, liveMs)) === 0) idle.push(kind);
  return idle;
}
