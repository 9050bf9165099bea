// `whale status` and `whale list`: what a run is doing and where it waits, from describe (search
// attributes, memo, pending activities) and the task queues' pollers, so it works while no worker runs.
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { diskUse, formatBytes, type DiskUse } from '../store/gc';
import { collectRunReferences } from '../store/run-references';

export interface PendingActivityView {
  activityType: string;
  taskQueue: string | null;
  state: string;
  attempt: number;
  lastFailure: string | null;
  heartbeat: unknown;
  pollers: number | null;
}

export interface RunStatusView {
  workflowId: string;
  runId: string;
  status: string;
  searchAttributes: Record<string, unknown>;
  memo: Record<string, unknown> | undefined;
  pending: PendingActivityView[];
  waitingOn: string | null;
  /** Bytes in the artifact store this run references (set by `whale status`, not by the progress line). */
  disk?: (DiskUse & { store: string }) | { store: string; error: string };
}

function decodePayload(p: temporal.api.common.v1.IPayload | null | undefined): unknown {
  if (!p?.data) return undefined;
  try {
    return JSON.parse(Buffer.from(p.data).toString('utf8'));
  } catch {
    return undefined;
  }
}

const PENDING_STATE: Record<number, string> = { 0: 'unspecified', 1: 'scheduled', 2: 'started', 3: 'cancel-requested', 4: 'paused', 5: 'pause-requested' };

async function activityPollers(client: Client, taskQueue: string): Promise<number | null> {
  // Loaded here: `whale start` imports this file (through follow.ts) also when it fails before connecting.
  const proto = require('@temporalio/proto') as typeof import('@temporalio/proto');
  try {
    const res = await client.workflowService.describeTaskQueue({
      namespace: client.options.namespace, taskQueue: { name: taskQueue },
      taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    });
    return res.pollers?.length ?? 0;
  } catch {
    return null;
  }
}

export async function describeRun(client: Client, workflowId: string): Promise<RunStatusView> {
  const handle = client.workflow.getHandle(workflowId);
  const d: WorkflowExecutionDescription = await handle.describe();
  const searchAttributes: Record<string, unknown> = {};
  for (const key of ALL_SEARCH_ATTRIBUTES) {
    const v = d.typedSearchAttributes.get(key as never);
    if (v !== undefined) searchAttributes[key.name] = v;
  }
  const pending: PendingActivityView[] = [];
  for (const a of d.raw.pendingActivities ?? []) {
    // The pending-activity info does not carry its queue in every server version; the memo-free fallback is null.
    const taskQueue = (a as { activityOptions?: { taskQueue?: { name?: string } } }).activityOptions?.taskQueue?.name ?? null;
    pending.push({
      activityType: a.activityType?.name ?? '?',
      taskQueue,
      state: PENDING_STATE[a.state ?? 0] ?? String(a.state),
      attempt: a.attempt ?? 0,
      lastFailure: a.lastFailure?.message ?? null,
      heartbeat: a.heartbeatDetails?.payloads?.length ? decodePayload(a.heartbeatDetails.payloads[0]) : undefined,
      pollers: taskQueue ? await activityPollers(client, taskQueue) : null,
    });
  }
  const memo = d.memo as Record<string, unknown> | undefined;
  let waitingOn: string | null = null;
  const first = pending[0];
  if (first) {
    const queue = first.taskQueue ? ` in task queue '${first.taskQueue}'` : '';
    const noWorker = first.pollers === 0 ? ' (no worker is polling it: start one with `whale worker --queue ...`)' : '';
    waitingOn = `${first.activityType} (${first.state}, attempt ${first.attempt})${queue}${noWorker}`;
  }
  return { workflowId, runId: d.runId, status: d.status.name, searchAttributes, memo, pending, waitingOn };
}

export function formatStatus(v: RunStatusView): string {
  const lines = [`run ${v.workflowId} (${v.runId})`, `  status:      ${v.status}`];
  const sa = v.searchAttributes;
  const fmt = (x: unknown) => (Array.isArray(x) ? x.join(',') : x === undefined ? '-' : String(x));
  lines.push(`  method:      ${fmt(sa.WhaleMethod)} on ${fmt(sa.WhaleDomain)}`);
  lines.push(`  phase:       ${fmt(sa.WhalePhase)} (cycle ${fmt(sa.WhaleCycle)}, ${fmt(sa.WhaleRunState)})`);
  lines.push(`  weight step: ${fmt(sa.WhaleStep)}   rollouts used: ${fmt(sa.WhaleRollouts)}`);
  lines.push(`  train reward ${fmt(sa.WhaleTrainReward)}   best mean@8 ${fmt(sa.WhaleBestScore)}   final mean@8 ${fmt(sa.WhaleFinalScore)}`);
  const status = v.memo?.whaleStatus as Record<string, unknown> | undefined;
  if (status?.lastRule) lines.push(`  last rule:   ${String(status.lastRule)}`);
  if (v.waitingOn) lines.push(`  waiting on:  ${v.waitingOn}`);
  for (const p of v.pending) if (p.lastFailure) lines.push(`  last failure of ${p.activityType}: ${p.lastFailure}`);
  if (v.disk && 'error' in v.disk) lines.push(`  disk use:    unknown (${v.disk.error})`);
  else if (v.disk) {
    const steps = v.disk.stepFolders ? ` + ${v.disk.stepFolders} trainer step folders with the served weights its checkpoint pointers name (${formatBytes(v.disk.stepFolderBytes)})` : '';
    lines.push(`  disk use:    ${formatBytes(v.disk.bytes + v.disk.archiveBytes + (v.disk.stepFolderBytes ?? 0))}: ${v.disk.objects} objects (${formatBytes(v.disk.bytes)}, shared ones such as the base policy included) + ${v.disk.archives} harness archives (${formatBytes(v.disk.archiveBytes)})${steps} in ${v.disk.store}`);
  }
  return lines.join('\n');
}

/** The run's disk use: the store objects its histories reference (and what they reference) plus its archives. */
export async function runDiskUse(client: Client, workflowId: string, storeRoot: string): Promise<NonNullable<RunStatusView['disk']>> {
  try {
    const refs = await collectRunReferences(client, workflowId);
    return { store: storeRoot, ...(await diskUse(storeRoot, refs)) };
  } catch (err) {
    return { store: storeRoot, error: (err as Error).message };
  }
}

export interface RunListRow {
  workflowId: string;
  status: string;
  startTime: string;
  method: string | null;
  domain: string | null;
  phase: string | null;
  runState: string | null;
  step: number | null;
  rollouts: number | null;
  bestScore: number | null;
  finalScore: number | null;
}

/** Runs (newest first; each workflow id once, its latest run) with what their search attributes say. */
export async function listRunRows(client: Client, query: string | undefined, limit: number): Promise<RunListRow[]> {
  const q = ["WorkflowType = 'whaleRun'", query ? `(${query})` : undefined].filter(Boolean).join(' AND ');
  const rows: RunListRow[] = [];
  const seen = new Set<string>();
  for await (const w of client.workflow.list({ query: q })) {
    // A continue-as-new chain lists one closed execution per carry-over; the newest (listed first) speaks for it.
    if (seen.has(w.workflowId)) continue;
    seen.add(w.workflowId);
    const sa = w.typedSearchAttributes;
    const get = (name: string): unknown => {
      const key = ALL_SEARCH_ATTRIBUTES.find((k) => k.name === name);
      return key ? sa.get(key as never) : undefined;
    };
    const str = (x: unknown) => (typeof x === 'string' ? x : null);
    const num = (x: unknown) => (typeof x === 'number' ? x : null);
    rows.push({
      workflowId: w.workflowId, status: w.status.name, startTime: w.startTime.toISOString(),
      method: str(get('WhaleMethod')), domain: str(get('WhaleDomain')), phase: str(get('WhalePhase')), runState: str(get('WhaleRunState')),
      step: num(get('WhaleStep')), rollouts: num(get('WhaleRollouts')), bestScore: num(get('WhaleBestScore')), finalScore: num(get('WhaleFinalScore')),
    });
    if (rows.length >= limit) break;
  }
  return rows;
}

/** An aligned table with a header line (or a note when there are no runs). */
export function formatRunTable(rows: RunListRow[]): string[] {
  if (rows.length === 0) return ['no runs match'];
  const score = (x: number | null) => (x === null ? '-' : x.toFixed(3));
  const table = [
    ['WORKFLOW ID', 'STATUS', 'METHOD', 'DOMAIN', 'PHASE', 'STEP', 'ROLLOUTS', 'BEST', 'FINAL', 'STARTED'],
    ...rows.map((r) => [
      r.workflowId, r.runState === 'paused' && r.status === 'RUNNING' ? 'PAUSED' : r.status, r.method ?? '-', r.domain ?? '-', r.phase ?? '-',
      r.step === null ? '-' : String(r.step), r.rollouts === null ? '-' : String(r.rollouts), score(r.bestScore), score(r.finalScore),
      r.startTime.slice(0, 19).replace('T', ' '),
    ]),
  ];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  return table.map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]))).join('  '));
}

export async function listRuns(client: Client, query: string | undefined, limit: number): Promise<string[]> {
  return formatRunTable(await listRunRows(client, query, limit));
}
