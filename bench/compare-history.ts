// Reading a finished comparison run back from its workflow histories: the continue-as-new chain, wall and
// activity time, and the run's result (scores, rollouts, the test curve).
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { buildTimeline } from '../audit/timeline';
import type { RunSummary } from '../workflows/run-state';
import type { PlannedRun } from './compare-plan';

export type History = temporal.api.history.v1.IHistory;

export interface CurvePoint { rollouts: number; meanAt8: number; label: string }

export interface RunResult {
  domain: string;
  method: string;
  seed: number;
  workflowId: string;
  status: 'completed';
  initialMeanAt8: number | null;
  bestMeanAt8: number | null;
  finalMeanAt8: number | null;
  /** Training + search rollouts (the budgeted quantity). */
  rolloutsUsed: number;
  testRollouts: number;
  weightSteps: number;
  proposalRounds: number;
  /** Workflow start to close over the continue-as-new chain (includes any time the run waited for workers). */
  wallSeconds: number;
  /** Seconds inside activity executions (started to closed), summed; parallel activities counted once each. */
  activitySeconds: number;
  curve: CurvePoint[];
  input: Record<string, unknown>;
  /** The run's comparison protocol and budget use (protocol, maxRollouts, spent, unspent, within budget); null: a run from before the field. */
  budget?: RunSummary['budget'] | null;
  /** The evaluation grid (test.everyRollouts): grid point, exact rollouts, mean@8; null without a grid. */
  grid?: RunSummary['gridEvaluations'] | null;
}


/** Milliseconds of a protobuf timestamp (NaN when absent). */
export const ts = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : NaN;

/** The histories of the latest continue-as-new chain of a workflow id, oldest first (earlier failed chains are left out). */
export async function fetchLatestChain(client: Client, workflowId: string, latestRunId?: string): Promise<History[]> {
  const chain: History[] = [];
  let runId: string | undefined = latestRunId;
  for (let guard = 0; guard < 10_000; guard++) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    chain.unshift(history);
    const previous = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!previous) return chain;
    runId = previous;
  }
  throw new Error(`continue-as-new chain of ${workflowId} does not end`);
}

/** Wall time (first start to last close) and time inside activity executions, from the chain's histories. */
export function historyTimes(histories: History[]): { wallSeconds: number; activitySeconds: number } {
  let first = NaN;
  let last = NaN;
  let activityMs = 0;
  for (const h of histories) {
    const started = new Map<string, number>();
    for (const e of h.events ?? []) {
      const t = ts(e.eventTime as never);
      if (Number.isNaN(first)) first = t;
      last = t;
      if (e.activityTaskStartedEventAttributes) started.set(String(e.activityTaskStartedEventAttributes.scheduledEventId), t);
      const closed = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCanceledEventAttributes;
      if (closed) {
        const s = started.get(String(closed.scheduledEventId));
        if (s !== undefined) activityMs += t - s;
      }
    }
  }
  return { wallSeconds: (last - first) / 1000, activitySeconds: activityMs / 1000 };
}

/** A finished run's result from its histories (null while it has not completed). */
export function resultFromHistories(run: PlannedRun, histories: History[]): RunResult | null {
  const t = buildTimeline(run.workflowId, histories);
  if (t.status !== 'completed' || !t.summary) return null;
  const s: RunSummary = t.summary;
  const times = historyTimes(histories);
  const rolloutsUsed = s.ledger.training + s.ledger.search;
  const curve: CurvePoint[] = t.tests.map((x) => ({ rollouts: x.atRollouts, meanAt8: x.meanAt8, label: x.label }));
  // The workflow does not re-evaluate an unchanged (checkpoint, harness) pair: its final score then is the last
  // evaluation's, recorded at the final rollout count. The curve shows it there too.
  const last = curve[curve.length - 1];
  if (s.finalMeanAt8 !== null && (!last || last.rollouts < rolloutsUsed)) curve.push({ rollouts: rolloutsUsed, meanAt8: s.finalMeanAt8, label: 'final' });
  return {
    domain: run.domain, method: run.method, seed: run.seed, workflowId: run.workflowId, status: 'completed',
    initialMeanAt8: s.initialMeanAt8, bestMeanAt8: s.bestMeanAt8, finalMeanAt8: s.finalMeanAt8,
    rolloutsUsed, testRollouts: s.ledger.test,
    weightSteps: s.weightStepsDone, proposalRounds: s.proposalRoundsDone, ...times,
    curve,
    input: run.input,
    budget: s.budget ?? null, grid: s.gridEvaluations ?? null,
  };
}

