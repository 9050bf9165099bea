// A WHALE run's metrics for a tracker, derived from its workflow histories (the audit's timeline) and its
// description: the run config as parameters, per weight step the reward, accepted count, loss, rollouts and
// phase, and every test mean@8. Pure apart from reading the histories it is given.
import type { temporal } from '@temporalio/proto';
import { allTests, type Timeline } from '../audit/timeline';
import type { MetricPoint, TrackedRun, TrackedStatus } from './exporter';

type History = temporal.api.history.v1.IHistory;

/**
 * The metric keys and what their `step` counts. Per weight step (step = weight step): the training signal,
 * the accepted trajectories, the fine-tune loss, the step's rollouts, the training + search rollouts spent so
 * far, and the cycle it ran in (1 + harness phases finished before it, the workflow's own rule). Test evaluations use step = rollouts spent when scheduled, because several
 * evaluations can fall on one weight step (a harness phase trains no weights).
 */
export const METRIC_KEYS = {
  reward: 'train/mean_reward',
  accepted: 'train/accepted',
  loss: 'train/loss',
  stepRollouts: 'train/rollouts',
  rolloutsSpent: 'rollouts_spent',
  cycle: 'phase/cycle',
  testMeanAt8: 'test/mean_at_8',
  testAtWeightStep: 'test/at_weight_step',
} as const;

function toMillis(t: temporal.api.history.v1.IHistoryEvent['eventTime']): number {
  if (!t) return 0;
  return Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

/**
 * Completion times of rolloutBatch and evaluateTest activities in history order (the timeline's order), and
 * per rollout batch the harness phases finished before it. Only what the history holds when the step
 * completes: the phase records arrive with the result or a continue-as-new, too late for a run followed live.
 */
function completionTimes(histories: History[]): { steps: number[]; harnessBefore: number[]; tests: number[]; start: number; end: number | null } {
  const steps: number[] = [];
  const harnessBefore: number[] = [];
  let harnessDone = 0;
  const tests: number[] = [];
  let start = 0;
  let end: number | null = null;
  for (const h of histories) {
    const types = new Map<string, string>();
    for (const e of h.events ?? []) {
      if (e.workflowExecutionStartedEventAttributes && start === 0) start = toMillis(e.eventTime);
      const s = e.activityTaskScheduledEventAttributes;
      if (s) types.set(String(e.eventId), s.activityType?.name ?? '');
      const c = e.activityTaskCompletedEventAttributes;
      if (c) {
        const type = types.get(String(c.scheduledEventId));
        if (type === 'rolloutBatch') {
          steps.push(toMillis(e.eventTime));
          harnessBefore.push(harnessDone);
        }
        if (type === 'finalizeHarnessPhase') harnessDone++;
        if (type === 'evaluateTest') tests.push(toMillis(e.eventTime));
      }
      if (e.workflowExecutionCompletedEventAttributes || e.workflowExecutionFailedEventAttributes || e.workflowExecutionTerminatedEventAttributes
        || e.workflowExecutionCanceledEventAttributes || e.workflowExecutionTimedOutEventAttributes) end = toMillis(e.eventTime);
      // A continue-as-new closes one run of the chain, not the WHALE run.
      if (e.workflowExecutionContinuedAsNewEventAttributes) end = null;
    }
  }
  return { steps, harnessBefore, tests, start, end };
}

/** `{ a: { b: 1 }, c: [1, 2] }` -> `{ 'a.b': '1', c: '[1,2]' }` (a tracker's params are flat strings). */
export function flattenParams(value: unknown, prefix = '', out: Record<string, string> = {}): Record<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) flattenParams(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) {
    out[prefix] = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  }
  return out;
}

const STATUS: Record<Timeline['status'], TrackedStatus> = { running: 'running', completed: 'finished', failed: 'failed', other: 'killed' };

export function trackedRun(t: Timeline, histories: History[], extraTags: Record<string, string> = {}): TrackedRun {
  const times = completionTimes(histories);
  const metrics: MetricPoint[] = [];
  t.steps.forEach((s, i) => {
    const timestamp = times.steps[i] ?? times.start;
    const add = (key: string, value: number | null | undefined) => {
      if (typeof value === 'number' && Number.isFinite(value)) metrics.push({ key, value, step: s.step, timestamp });
    };
    add(METRIC_KEYS.reward, s.meanReward);
    add(METRIC_KEYS.accepted, s.accepted);
    add(METRIC_KEYS.loss, s.fineTune?.meanLoss);
    add(METRIC_KEYS.stepRollouts, s.rollouts);
    add(METRIC_KEYS.rolloutsSpent, s.atRollouts);
    add(METRIC_KEYS.cycle, 1 + (times.harnessBefore[i] ?? 0));
  });
  // Every evaluation the workflow recorded, reused scores included (they take the time of the evaluation
  // before them: they cost no activity).
  let activity = 0;
  let timestamp = times.start;
  for (const e of allTests(t)) {
    if (!e.reused) timestamp = times.tests[activity++] ?? timestamp;
    metrics.push({ key: METRIC_KEYS.testMeanAt8, value: e.meanAt8, step: e.atRollouts, timestamp });
    metrics.push({ key: METRIC_KEYS.testAtWeightStep, value: e.atWeightStep, step: e.atRollouts, timestamp });
  }
  const config = (t.config ?? t.input ?? {}) as { method?: unknown; domain?: unknown };
  const tags: Record<string, string> = {
    'whale.workflow_id': t.workflowId,
    'whale.status': t.status,
    'whale.weight_steps': String(t.steps.length),
    'whale.phases_finished': String(t.recordedPhases.length),
    ...(typeof config.method === 'string' ? { 'whale.method': config.method } : {}),
    ...(config.domain !== undefined ? { 'whale.domain': typeof config.domain === 'string' ? config.domain : JSON.stringify(config.domain) } : {}),
    ...(t.summary?.bestMeanAt8 != null ? { 'whale.best_mean_at_8': String(t.summary.bestMeanAt8) } : {}),
    ...(t.failure ? { 'whale.failure': t.failure.slice(0, 4000) } : {}),
    ...extraTags,
  };
  return {
    workflowId: t.workflowId, name: t.workflowId, status: STATUS[t.status], startTime: times.start, endTime: t.status === 'running' ? null : times.end,
    params: flattenParams(t.config ?? t.input), tags, metrics,
  };
}
