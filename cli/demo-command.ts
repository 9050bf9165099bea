// `whale demo`: the main job on the embedded default. Starts a dev server (unless one answers already) and
// the workers this release implements, starts the demo run, follows it with a progress line, and stops what
// it started. While the model worker's activities are not implemented, the run is shown waiting durably in
// the model queue (what every run does during preemption) and the demo ends there.
import type { ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import type { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { IMPLEMENTED_WORKER_KINDS } from '../workers/kinds';
import { ensureDevServer, startWorkers, stopProcesses } from './local-processes';
import { describeRun, formatStatus } from './status';
import { PROJECT_ROOT } from './paths';
import { followRun, formatSummary, loadPreset } from './follow';
import { buildTimeline, fetchHistories } from '../audit/timeline';
import { explainPhases } from '../audit/explain';
import { writeReport } from '../audit/report';
import { startMetadata } from '../workflows/user-metadata';


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
  let started: ChildProcess[] = [];
  const server = await ensureDevServer(config, (line) => out.write(`[demo] ${line}\n`));
  try {
    started = startWorkers(IMPLEMENTED_WORKER_KINDS.map((kind) => ({ kind, count: 1 })), 'worker');
    out.write(`[demo] workers: ${IMPLEMENTED_WORKER_KINDS.join(', ')} (logs in .data/logs/)\n`);
    const client = await connectClient(config);
    const workflowId = `whale-demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    const demo = loadPreset('demo') as { name: string };
    await client.workflow.start('whaleRun', { taskQueue: config.taskQueues.orchestration, workflowId, args: [demo], ...startMetadata(demo) });
    out.write(`[demo] started run ${workflowId}: ${demo.name}\n`);
    await follow(client, workflowId, out);
  } finally {
    await stopProcesses(started, server);
  }
}

async function follow(client: Client, workflowId: string, out: NodeJS.WritableStream): Promise<void> {
  if (!IMPLEMENTED_WORKER_KINDS.includes('model') || !IMPLEMENTED_WORKER_KINDS.includes('proposer')) {
    const view = await pollUntil(async () => {
      const v = await describeRun(client, workflowId);
      return v.pending.length > 0 ? v : undefined;
    }, 120_000, 'the run to schedule its first activity');
    out.write(formatStatus(view) + '\n');
    out.write('[demo] this release does not serve every queue the demo needs yet: the run waits, durably, in its task queue.\n' +
      '[demo] It stays in the dev server\'s database (.data/temporal); once a worker serves the queue, it continues where it waits.\n');
    return;
  }
  const summary = await followRun(client, workflowId, out);
  out.write(formatSummary(summary) + '\n');
  const report = path.join(PROJECT_ROOT, 'reports', `audit-${workflowId}`);
  const timeline = buildTimeline(workflowId, await fetchHistories(client, workflowId));
  await writeReport(timeline, explainPhases(timeline), report);
  out.write(`[demo] audit report: ${path.relative(process.cwd(), report)}/index.html (and summary.md)\n`);
  const gain = (summary.finalMeanAt8 ?? 0) - (summary.initialMeanAt8 ?? 0);
  out.write(`[demo] test mean@8: ${summary.initialMeanAt8?.toFixed(4)} (base weights, h0) -> ${summary.finalMeanAt8?.toFixed(4)} final, ${summary.bestMeanAt8?.toFixed(4)} best (${gain >= 0 ? '+' : ''}${(100 * gain).toFixed(1)} points)\n`);
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('run the main job on the embedded default (starts a dev server and workers if none run)')
    .action(async () => runDemo());
}
