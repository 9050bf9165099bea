// Reads a run's workflow history (every run of a continue-as-new chain, from the server or from exported
// JSON) into a timeline of decoded facts: the expanded config, each weight step's signal, each test
// evaluation, each harness phase's archive rows, messages received, and the recorded phase records.
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import type { ArchiveRow, EvaluateTestResult, FineTuneStepResult, RolloutBatchInput, RolloutBatchResult } from '../activities/types';
import { expandRunConfig, type RunConfig } from '../workflows/run-config';
import type { PhaseRecord, RunSummary } from '../workflows/run-state';

type History = temporal.api.history.v1.IHistory;
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

export interface WeightStepFact {
  step: number;
  meanReward: number | null;
  accepted: number;
  rollouts: number;
  promptIds: string[];
  fineTune: FineTuneStepResult | null;
  /** Training + search rollouts after this step. */
  atRollouts: number;
}
export interface TestFact {
  label: string;
  meanAt8: number;
  /** Training + search rollouts spent when the evaluation was scheduled. */
  atRollouts: number;
  atWeightStep: number;
}
export interface HarnessPhaseFact {
  archiveKey: string;
  rows: ArchiveRow[];
  accepted: string;
  frontier: string[];
  /** Training + search rollouts at the phase end. */
  atRollouts: number;
  /** Search rollouts each candidate cost (validation + scoring), by name: the spend round by round. */
  candidateRollouts: Record<string, number>;
}
export interface MessageFact {
  kind: 'signal' | 'update';
  name: string;
  args: unknown[];
  /** Weight steps completed when it arrived. */
  atWeightStep: number;
  /** A weight step (rollout batch or fine-tune step) was in flight when it arrived. */
  stepInFlight: boolean;
}

export interface Timeline {
  workflowId: string;
  runs: number;
  input: unknown;
  config: RunConfig | null;
  splitSizes: { weight: number; harness: number; test: number } | null;
  steps: WeightStepFact[];
  /** Test evaluations from the history's evaluateTest activities (an evaluation that reused a score has none). */
  tests: TestFact[];
  /**
   * Every test evaluation as the workflow recorded it, reused ones included: the list a continue-as-new
   * carried or the result held (null before either, and for runs closed before results listed them),
   * with how many of `tests` it covers. `allTests` joins it with the activities after it.
   */
  recordedTests: { tests: TestFact[]; coversActivities: number } | null;
  harnessPhases: HarnessPhaseFact[];
  messages: MessageFact[];
  /** Rollouts spent by harness scoring and validation, as they happened: [trainingSoFar + searchSoFar]. */
  searchRollouts: number;
  status: 'running' | 'completed' | 'failed' | 'other';
  failure: string | null;
  summary: RunSummary | null;
  /** Phase records as the workflow wrote them (from the result, or the last continue-as-new state). */
  recordedPhases: PhaseRecord[];
  /** Workflow patches (patched() markers) by id, with the number of harness phases finalized before each. */
  patches: Array<{ id: string; atHarnessPhase: number }>;
}

function decode(p: Payloads): unknown[] {
  return (p?.payloads ?? []).map((x) => (x.data ? JSON.parse(Buffer.from(x.data).toString('utf8')) : undefined));
}

/** Builds the timeline from the histories of a chain, oldest run first. */
export function buildTimeline(workflowId: string, histories: History[]): Timeline {
  const t: Timeline = {
    workflowId, runs: histories.length, input: undefined, config: null, splitSizes: null, steps: [], tests: [], recordedTests: null, harnessPhases: [], messages: [],
    searchRollouts: 0, status: 'running', failure: null, summary: null, recordedPhases: [], patches: [],
  };
  let training = 0;
  const candidateRollouts = new Map<string, Record<string, number>>();
  for (const history of histories) {
    const scheduled = new Map<string, { type: string; input: unknown }>();
    // Weight-step activities scheduled and not yet closed (completed, failed, timed out or cancelled).
    const inFlight = new Set<string>();
    for (const e of history.events ?? []) {
      const started = e.workflowExecutionStartedEventAttributes;
      if (started && t.input === undefined) t.input = decode(started.input)[0];
      const s = e.activityTaskScheduledEventAttributes;
      if (s) {
        const input = decode(s.input)[0];
        scheduled.set(String(e.eventId), { type: s.activityType?.name ?? '', input });
        if (s.activityType?.name === 'rolloutBatch' || s.activityType?.name === 'fineTuneStep') inFlight.add(String(e.eventId));
        if (s.activityType?.name === 'prepareRun') t.config = ((input as { config?: RunConfig }).config ?? t.config) as RunConfig | null;
      }
      const closed = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCanceledEventAttributes;
      if (closed) inFlight.delete(String(closed.scheduledEventId));
      const c = e.activityTaskCompletedEventAttributes;
      if (c) {
        const act = scheduled.get(String(c.scheduledEventId));
        const result = decode(c.result)[0];
        if (act?.type === 'prepareRun') {
          t.splitSizes = (result as { splitSizes: Timeline['splitSizes'] }).splitSizes;
        } else if (act?.type === 'rolloutBatch') {
          const r = result as RolloutBatchResult;
          training += r.rollouts;
          t.steps.push({ step: (act.input as RolloutBatchInput).step, meanReward: r.meanReward, accepted: r.accepted, rollouts: r.rollouts, promptIds: r.promptIds, fineTune: null, atRollouts: training + t.searchRollouts });
        } else if (act?.type === 'fineTuneStep') {
          const last = t.steps[t.steps.length - 1];
          if (last) last.fineTune = result as FineTuneStepResult;
        } else if (act?.type === 'evaluateTest') {
          const input = act.input as { label: string };
          t.tests.push({ label: input.label, meanAt8: (result as EvaluateTestResult).meanAt8, atRollouts: training + t.searchRollouts, atWeightStep: t.steps.length });
        } else if (act?.type === 'evaluateHarness' || act?.type === 'validateHarness') {
          const n = (result as { rollouts: number }).rollouts;
          t.searchRollouts += n;
          const { archiveKey, name } = act.input as { archiveKey: string; name: string };
          const byName = candidateRollouts.get(archiveKey) ?? {};
          byName[name] = (byName[name] ?? 0) + n;
          candidateRollouts.set(archiveKey, byName);
        } else if (act?.type === 'finalizeHarnessPhase') {
          const input = act.input as { archiveKey: string; rows: ArchiveRow[]; accepted: string; frontier: string[] };
          t.harnessPhases.push({ ...input, atRollouts: training + t.searchRollouts, candidateRollouts: candidateRollouts.get(input.archiveKey) ?? {} });
        }
      }
      const marker = e.markerRecordedEventAttributes;
      if (marker?.markerName === 'core_patch') {
        // The SDK records { id, deprecated } under the detail key 'patch-data'.
        const data = decode(marker.details?.['patch-data'])[0] as { id?: unknown } | undefined;
        if (typeof data?.id === 'string') t.patches.push({ id: data.id, atHarnessPhase: t.harnessPhases.length });
      }
      const sig = e.workflowExecutionSignaledEventAttributes;
      if (sig) t.messages.push({ kind: 'signal', name: sig.signalName ?? '', args: decode(sig.input), atWeightStep: t.steps.length, stepInFlight: inFlight.size > 0 });
      const upd = e.workflowExecutionUpdateAcceptedEventAttributes;
      if (upd) t.messages.push({ kind: 'update', name: upd.acceptedRequest?.input?.name ?? '', args: decode(upd.acceptedRequest?.input?.args), atWeightStep: t.steps.length, stepInFlight: inFlight.size > 0 });
      const can = e.workflowExecutionContinuedAsNewEventAttributes;
      if (can) {
        const carried = decode(can.input)[1] as { phases?: PhaseRecord[]; tests?: { evaluations?: TestFact[] } } | undefined;
        if (carried?.phases) t.recordedPhases = carried.phases;
        if (carried?.tests?.evaluations) t.recordedTests = { tests: carried.tests.evaluations, coversActivities: t.tests.length };
      }
      const done = e.workflowExecutionCompletedEventAttributes;
      if (done) {
        t.status = 'completed';
        t.summary = decode(done.result)[0] as RunSummary;
        t.recordedPhases = t.summary.phases;
        if (t.summary.testEvaluations) t.recordedTests = { tests: t.summary.testEvaluations, coversActivities: t.tests.length };
      }
      const failed = e.workflowExecutionFailedEventAttributes;
      if (failed) {
        t.status = 'failed';
        t.failure = failureText(failed.failure);
      }
    }
  }
  if (!t.config) {
    // Older histories: the expanded config is a pure function of the input (same version, same defaults).
    const expanded = expandRunConfig(t.input);
    if (expanded.ok) t.config = expanded.config;
  }
  return t;
}

/**
 * Every test evaluation known from the history, in the workflow's order: the recorded list (reused
 * evaluations included) followed by the evaluateTest activities after it; `reused` marks those without an
 * activity of their own. Without a recorded list, the activities alone.
 */
export function allTests(t: Timeline): Array<TestFact & { reused: boolean }> {
  if (!t.recordedTests) return t.tests.map((e) => ({ ...e, reused: false }));
  const out: Array<TestFact & { reused: boolean }> = [];
  let next = 0;
  for (const e of t.recordedTests.tests) {
    const a = t.tests[next];
    const own = next < t.recordedTests.coversActivities && a !== undefined && a.label === e.label && a.atRollouts === e.atRollouts && a.meanAt8 === e.meanAt8;
    if (own) next++;
    out.push({ label: e.label, meanAt8: e.meanAt8, atRollouts: e.atRollouts, atWeightStep: e.atWeightStep, reused: !own });
  }
  for (const e of t.tests.slice(t.recordedTests.coversActivities)) out.push({ ...e, reused: false });
  return out;
}

/**
 * A run's failure with its causes, each as `type: message`: a run failed by an activity then names the
 * activity's error class and message ("Activity task failed; caused by AgentConfigError: ..."), not only
 * the wrapper's words.
 */
export function failureText(failure: temporal.api.failure.v1.IFailure | null | undefined): string {
  const parts: string[] = [];
  for (let f = failure, depth = 0; f && depth < 8; f = f.cause, depth++) {
    const type = f.applicationFailureInfo?.type;
    parts.push(type ? `${type}: ${f.message ?? ''}` : (f.message ?? ''));
  }
  return parts.filter((p) => p !== '').join('; caused by ') || 'failed';
}

/** Every run of a chain from the server, oldest first. */
export async function fetchHistories(client: Client, workflowId: string): Promise<History[]> {
  const runs: { start: number; runId: string }[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push({ start: w.startTime.getTime(), runId: w.runId });
  if (runs.length === 0) throw new Error(`no run with workflow id '${workflowId}' on this server (namespace retention may have removed it; audit an exported history with --history)`);
  runs.sort((a, b) => a.start - b.start);
  const out: History[] = [];
  for (const r of runs) out.push(await client.workflow.getHandle(workflowId, r.runId).fetchHistory());
  return out;
}

/** Histories from exported JSON files (`temporal workflow show --output json`), one per continue-as-new run, in order. */
export function readHistoryFiles(files: string[]): History[] {
  return files.map((f) => {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch (err) {
      throw new Error(`cannot read history ${f}: ${(err as Error).message}`);
    }
    try {
      return historyFromJSON(JSON.parse(text)) as History;
    } catch (err) {
      throw new Error(`${f} is not a workflow history exported with \`temporal workflow show --output json\`: ${(err as Error).message}`);
    }
  });
}
