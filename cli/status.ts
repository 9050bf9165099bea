// `whale status` and `whale list`: what a run is doing and where it waits, from describe (search
// attributes, memo, pending activities) and the task queues' pollers, so it works while no worker runs.
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';

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
  try {
    const res = await client.workflowService.describeTaskQueue({
      namespace: client.options.namespace, taskQueue: { name: taskQueue },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
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
  return lines.join('\n');
}

export async function listRuns(client: Client, query: string | undefined, limit: number): Promise<string[]> {
  const q = ["WorkflowType = 'whaleRun'", query].filter(Boolean).join(' AND ');
  const rows: string[] = [];
  for await (const w of client.workflow.list({ query: q })) {
    const sa = w.typedSearchAttributes;
    const get = (name: string) => {
      const key = ALL_SEARCH_ATTRIBUTES.find((k) => k.name === name);
      return key ? sa.get(key as never) : undefined;
    };
    rows.push([w.workflowId, w.status.name, get('WhaleMethod') ?? '-', get('WhaleDomain') ?? '-', get('WhalePhase') ?? '-', `step ${get('WhaleStep') ?? '-'}`, `best ${get('WhaleBestScore') ?? '-'}`].join('  '));
    if (rows.length >= limit) break;
  }
  return rows;
}
