// Live progress of a run for the terminal: a run-level line (phase, step, reward, best mean@8, rollouts) and
// the activity in flight with its progress from heartbeats. On a terminal the line is rewritten in place;
// otherwise a line is printed only when the state changes (quiet in logs and pipes).
import { readFileSync, existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import type { RunStatusView } from './status';
import { PROJECT_ROOT } from './paths';
import type { RunSummary } from '../workflows/run-state';

function fmt(x: unknown, digits = 3): string {
  if (typeof x === 'number') return Number.isInteger(x) ? String(x) : x.toFixed(digits);
  return x === undefined || x === null ? '-' : String(x);
}

function bar(done: number, total: number, width = 20): string {
  const f = total > 0 ? Math.min(1, done / total) : 0;
  const n = Math.round(f * width);
  return `[${'#'.repeat(n)}${'.'.repeat(width - n)}] ${done}/${total}`;
}

/** One line describing where the run stands, and what it is doing right now. */
export function progressLine(v: RunStatusView): string {
  const sa = v.searchAttributes;
  const memo = (v.memo?.whaleStatus ?? {}) as Record<string, unknown>;
  const parts = [
    `${fmt(sa.WhalePhase)}`,
    `step ${fmt(sa.WhaleStep)}`,
    `reward ${fmt(sa.WhaleTrainReward)}`,
    `best mean@8 ${fmt(sa.WhaleBestScore)}`,
    `rollouts ${fmt(sa.WhaleRollouts)}`,
  ];
  if (memo.runState === 'paused' || sa.WhaleRunState === 'paused') parts.push('PAUSED');
  const p = v.pending[0];
  if (p) {
    const hb = (p.heartbeat ?? {}) as { finished?: number; total?: number; progress?: number; phase?: string };
    let what = p.activityType;
    if (typeof hb.finished === 'number' && typeof hb.total === 'number') what += ` ${bar(hb.finished, hb.total)}`;
    else if (typeof hb.progress === 'number' && typeof hb.total === 'number') what += ` minibatch ${bar(hb.progress, hb.total)}`;
    if (p.attempt > 1) what += ` (attempt ${p.attempt})`;
    if (p.pollers === 0) what += ' (waiting for a worker)';
    parts.push(what);
  }
  return parts.join(' | ');
}

/** Follows a run to its end, printing progress; returns the run's summary. */
export async function followRun(client: Client, workflowId: string, out: NodeJS.WriteStream | NodeJS.WritableStream): Promise<RunSummary> {
  // Loaded here, not at the top: `whale start` needs only the presets from this file.
  const { describeRun } = require('./status') as typeof import('./status');
  const tty = 'isTTY' in out && Boolean(out.isTTY);
  const handle = client.workflow.getHandle(workflowId);
  let done = false;
  const result = handle.result().finally(() => (done = true)) as Promise<RunSummary>;
  let last = '';
  while (!done) {
    try {
      const v = await describeRun(client, workflowId);
      if (tty) {
        out.write(`\r\x1b[2K${progressLine(v).slice(0, ('columns' in out && out.columns) || 160)}`);
      } else {
        // Not a terminal (a log, a pipe): no bars, no activity chatter; one line per weight step or phase change.
        const line = progressLine({ ...v, pending: [] });
        if (line !== last) out.write(line + '\n');
        last = line;
      }
    } catch {
      // A transient describe failure (server restarting) is not the run's failure: keep following.
    }
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
  }
  if (tty) out.write('\n');
  return result;
}

/** Loads a preset by name from presets/ (the names `whale run --preset` accepts). */
export function loadPreset(name: string): unknown {
  const file = path.join(PROJECT_ROOT, 'presets', `${name}.json`);
  if (!/^[a-z0-9-]+$/.test(name) || !existsSync(file)) {
    throw new Error(`unknown preset '${name}'; presets: ${listPresets().join(', ')}`);
  }
  return JSON.parse(readFileSync(file, 'utf8'));
}

export function listPresets(): string[] {
  const dir = path.join(PROJECT_ROOT, 'presets');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort() : [];
}

export function formatSummary(s: RunSummary): string {
  const lines = [
    `run ${s.runId}: ${s.method} on ${s.domain}${s.stoppedEarly ? ' (stopped early)' : ''}`,
    `  weight steps ${s.weightStepsDone}, proposal rounds ${s.proposalRoundsDone}, continue-as-new ${s.continuedAsNew}`,
    `  test mean@8: initial ${fmt(s.initialMeanAt8)}, best ${fmt(s.bestMeanAt8)}, final ${fmt(s.finalMeanAt8)}`,
    `  rollouts: training ${s.ledger.training}, search ${s.ledger.search}, test ${s.ledger.test}`,
    `  final harness ${s.finalHarnessName}, checkpoint ${s.finalCheckpoint.sha256.slice(0, 12)}`,
    ...s.phases.map((p) => `  ${p.kind} phase ${p.index} (cycle ${p.cycle}): steps ${p.startStep}-${p.endStep}${p.kind === 'harness' ? `, ${p.proposalRounds} proposal rounds, accepted ${p.acceptedHarness ?? '-'} (${fmt(p.acceptedSuccess)})` : ''}; ${p.rule}`),
  ];
  return lines.join('\n');
}
