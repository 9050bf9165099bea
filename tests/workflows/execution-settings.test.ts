// The run config's `execution` block is the one home of activity timeouts and retry policies: the options
// every recorded history scheduled follow from its config, and a changed value reaches the server and acts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ApplicationFailure, defaultPayloadConverter, type Payload } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { msToNumber } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { activityOptions } from '../../workflows/whale-run-activities';
import { expandRunConfig, type RunConfig } from '../../workflows/run-config';
import { RunStateSchema, type RunSummary } from '../../workflows/run-state';
import { createTestWorker, ROOT, startTestServer, testConfig } from './env';
import { scriptedActivities } from './scripted-activities';

type Event = temporal.api.history.v1.IHistoryEvent;
type Kind = 'rollout' | 'fineTune' | 'evaluate' | 'propose';
const KIND: Record<string, Kind> = {
  rolloutBatch: 'rollout', fineTuneStep: 'fineTune', prepareRun: 'evaluate', evaluateTest: 'evaluate', evaluateHarness: 'evaluate',
  proposeHarnesses: 'propose', validateHarness: 'propose', finalizeHarnessPhase: 'propose',
};

/** A protobuf Duration in ms, whether its seconds came as a Long (fetched) or a number/string (from JSON). */
function tsToMs(d: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return d ? Number(String(d.seconds ?? 0)) * 1000 + Math.round((d.nanos ?? 0) / 1e6) : 0;
}

/** The options a scheduled event carries, in one comparable shape (durations in ms, 0 attempts = unlimited). */
function scheduledOptions(e: Event) {
  const a = e.activityTaskScheduledEventAttributes!;
  const r = a.retryPolicy!;
  return {
    taskQueue: a.taskQueue?.name, startToCloseMs: tsToMs(a.startToCloseTimeout), heartbeatMs: tsToMs(a.heartbeatTimeout),
    initialIntervalMs: tsToMs(r.initialInterval), backoffCoefficient: r.backoffCoefficient, maximumIntervalMs: tsToMs(r.maximumInterval),
    maximumAttempts: r.maximumAttempts ?? 0, nonRetryableErrorTypes: [...(r.nonRetryableErrorTypes ?? [])],
  };
}

/** The same shape from a run config: what the workflow passes to Temporal for one kind of activity. */
function configuredOptions(config: RunConfig, kind: Kind) {
  const queue = kind === 'propose' ? config.execution.proposerTaskQueue : config.execution.modelTaskQueue;
  const o = activityOptions(queue, config.execution[kind]);
  const retry = o.retry!;
  return {
    taskQueue: o.taskQueue, startToCloseMs: msToNumber(o.startToCloseTimeout!), heartbeatMs: msToNumber(o.heartbeatTimeout!),
    initialIntervalMs: msToNumber(retry.initialInterval!), backoffCoefficient: retry.backoffCoefficient, maximumIntervalMs: msToNumber(retry.maximumInterval!),
    maximumAttempts: retry.maximumAttempts ?? 0, nonRetryableErrorTypes: retry.nonRetryableErrorTypes,
  };
}

const decode = (p: Payload | null | undefined): unknown => (p ? defaultPayloadConverter.fromPayload(p) : undefined);
const scheduled = (events: Event[], type: string) => events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type);

/**
 * The config a run (or one run of a continue-as-new chain) worked with: its carried state's, else its input's;
 * null for an input the run refused (then it must have scheduled nothing).
 */
function configOf(events: Event[]): RunConfig | null {
  const [input, carried] = (events[0].workflowExecutionStartedEventAttributes?.input?.payloads ?? []).map(decode);
  if (carried !== undefined && carried !== null) return RunStateSchema.parse(carried).config;
  const expanded = expandRunConfig(input);
  if (expanded.ok) return expanded.config;
  const failed = events.find((e) => e.workflowExecutionFailedEventAttributes)?.workflowExecutionFailedEventAttributes;
  assert.equal(failed?.failure?.applicationFailureInfo?.type, 'InvalidRunConfig', `the recorded input no longer parses: ${expanded.problems.join('; ')}`);
  return null;
}

describe('execution settings in recorded histories', () => {
  const dir = path.join(ROOT, 'tests', 'histories', 'v1');
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

  it('has histories to check', () => assert.ok(files.length >= 5, `expected at least 5 recorded histories, found ${files.length}`));

  for (const file of files) {
    it(`${file}: its recorded config parses and gives exactly the activity options it scheduled (a refused one: none)`, () => {
      const events = historyFromJSON(JSON.parse(readFileSync(path.join(dir, file), 'utf8'))).events ?? [];
      const config = configOf(events);
      const all = events.filter((e) => e.activityTaskScheduledEventAttributes);
      if (config === null) return assert.equal(all.length, 0, 'a run whose config was refused scheduled activities');
      for (const e of all) {
        const type = e.activityTaskScheduledEventAttributes!.activityType!.name!;
        assert.ok(KIND[type], `activity type ${type} has no execution kind`);
        assert.deepEqual(scheduledOptions(e), configuredOptions(config, KIND[type]), `${type} (event ${String(e.eventId)})`);
      }
    });
  }
  it('the histories cover every kind of activity', () => {
    const kinds = new Set<Kind>();
    for (const file of files) {
      const events = historyFromJSON(JSON.parse(readFileSync(path.join(dir, file), 'utf8'))).events ?? [];
      for (const e of events) if (e.activityTaskScheduledEventAttributes) kinds.add(KIND[e.activityTaskScheduledEventAttributes.activityType!.name!]);
    }
    assert.deepEqual([...kinds].sort(), ['evaluate', 'fineTune', 'propose', 'rollout']);
  });
});

describe('execution settings in the config', () => {
  it('an old config without the retry fields expands to the retry policy runs always had', () => {
    const r = expandRunConfig({ version: 1, execution: { fineTune: { startToCloseTimeout: '3h', maximumAttempts: 5 } } });
    assert.ok(r.ok);
    assert.deepEqual(r.config.execution.fineTune, {
      startToCloseTimeout: '3h', heartbeatTimeout: '60s', maximumAttempts: 5,
      initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', nonRetryableErrorTypes: ['ConfigError', 'InvalidInput'],
    });
    assert.equal(r.config.execution.evaluate.startToCloseTimeout, '4h');
    assert.deepEqual([r.config.execution.propose.startToCloseTimeout, r.config.execution.propose.heartbeatTimeout], ['1h', '120s']);
    assert.deepEqual([r.config.harness.temperature, r.config.harness.topK], [1, 20]);
  });

  it('refuses a retry policy Temporal would reject, naming the field', () => {
    const r = expandRunConfig({ version: 1, execution: { propose: { initialInterval: '10s', maximumInterval: '5s' } } });
    assert.equal(r.ok, false);
    assert.match(r.ok ? '' : r.problems.join('\n'), /execution\.propose\.maximumInterval: must be at least initialInterval/);
    const low = expandRunConfig({ version: 1, execution: { rollout: { backoffCoefficient: 0.5 } } });
    assert.match(low.ok ? '' : low.problems.join('\n'), /execution\.rollout\.backoffCoefficient/);
  });
});

describe('execution settings on a real server', () => {
  let env: TestWorkflowEnvironment;
  before(async () => (env = await startTestServer()));
  after(async () => env?.teardown());

  const history = async (workflowId: string) => (await env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const attemptsOf = (events: Event[], scheduledId: unknown) =>
    events.filter((e) => e.activityTaskStartedEventAttributes && String(e.activityTaskStartedEventAttributes.scheduledEventId) === String(scheduledId)).map((e) => e.activityTaskStartedEventAttributes!.attempt);
  const fineTune = { startToCloseTimeout: '45s', heartbeatTimeout: '7s', maximumAttempts: 3, initialInterval: '200ms', backoffCoefficient: 1.5, maximumInterval: '400ms', nonRetryableErrorTypes: ['ConfigError', 'StepRefused'] };

  it('a changed fineTune policy is what the server schedules, and its retry runs a failed step again', async () => {
    const q = 'execution-retry';
    const s = scriptedActivities({ splitSizes: { weight: 10, harness: 4, test: 4 }, rewards: [0.5], testScores: [0.1, 0.2], candidateScores: {} });
    let attempts = 0;
    const activities = { ...s.activities, fineTuneStep: async (input: Parameters<typeof s.activities.fineTuneStep>[0]) => {
      if (++attempts === 1) throw ApplicationFailure.retryable('a transient failure of the first attempt', 'Transient');
      return s.activities.fineTuneStep(input);
    } };
    const worker = await createTestWorker(env, q, activities);
    const config = testConfig(q, { method: 'weights-only', budget: { totalWeightSteps: 1 }, execution: { modelTaskQueue: q, proposerTaskQueue: q, fineTune } });
    const summary = await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'execution-retry', args: [config] })) as RunSummary;
    assert.equal(summary.weightStepsDone, 1);
    s.assertFullyUsed();

    const events = await history('execution-retry');
    const [step] = scheduled(events, 'fineTuneStep');
    assert.deepEqual(scheduledOptions(step), {
      taskQueue: q, startToCloseMs: 45_000, heartbeatMs: 7_000, initialIntervalMs: 200, backoffCoefficient: 1.5, maximumIntervalMs: 400,
      maximumAttempts: 3, nonRetryableErrorTypes: ['ConfigError', 'StepRefused'],
    });
    assert.deepEqual(attemptsOf(events, step.eventId), [2], 'the step succeeded on its second attempt');
    assert.equal(attempts, 2);
    // The other kinds kept their defaults: what runs were always scheduled with.
    const [rollout] = scheduled(events, 'rolloutBatch');
    assert.deepEqual(scheduledOptions(rollout), {
      taskQueue: q, startToCloseMs: 7_200_000, heartbeatMs: 60_000, initialIntervalMs: 2_000, backoffCoefficient: 2, maximumIntervalMs: 60_000,
      maximumAttempts: 0, nonRetryableErrorTypes: ['ConfigError', 'InvalidInput'],
    });
  });

  it('maximumAttempts 1 lets one failed attempt fail the run', async () => {
    const q = 'execution-one-attempt';
    const s = scriptedActivities({ splitSizes: { weight: 10, harness: 4, test: 4 }, rewards: [0.5], testScores: [0.1], candidateScores: {} });
    let attempts = 0;
    const activities = { ...s.activities, fineTuneStep: async () => {
      attempts++;
      throw ApplicationFailure.retryable('a transient failure', 'Transient');
    } };
    const worker = await createTestWorker(env, q, activities);
    const config = testConfig(q, { method: 'weights-only', budget: { totalWeightSteps: 1 }, execution: { modelTaskQueue: q, proposerTaskQueue: q, fineTune: { ...fineTune, maximumAttempts: 1 } } });
    const outcome = await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'execution-one-attempt', args: [config] }).then(() => 'completed', () => 'failed'));
    assert.equal(outcome, 'failed');
    assert.equal(attempts, 1);
    const events = await history('execution-one-attempt');
    const [step] = scheduled(events, 'fineTuneStep');
    assert.equal(step.activityTaskScheduledEventAttributes!.retryPolicy!.maximumAttempts, 1);
    assert.deepEqual(attemptsOf(events, step.eventId), [1]);
    assert.equal(events.filter((e) => e.activityTaskFailedEventAttributes).length, 1);
  });

  it('propose options and the harness-evaluation sampling come from the config', async () => {
    const q = 'execution-harness';
    const s = scriptedActivities({
      splitSizes: { weight: 10, harness: 4, test: 4 }, rewards: [], testScores: [0.1, 0.2],
      candidateScores: { 'harness-phase-1/incoming': { successRate: 0.2, meanTurns: 2 }, 'harness-phase-1/r1-c1': { successRate: 0.5, meanTurns: 2 } },
    });
    const worker = await createTestWorker(env, q, s.activities);
    const propose = { startToCloseTimeout: '90s', heartbeatTimeout: '11s', initialInterval: '1s', maximumInterval: '3s' };
    const config = testConfig(q, {
      method: 'harness-only', harness: { candidatesPerRound: 1, temperature: 0.7, topK: 5 }, budget: { totalWeightSteps: 0, harnessOnlyProposalRounds: 1 },
      execution: { modelTaskQueue: q, proposerTaskQueue: q, propose },
    });
    await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'execution-harness', args: [config] }));
    s.assertFullyUsed();
    const events = await history('execution-harness');
    for (const type of ['proposeHarnesses', 'validateHarness', 'finalizeHarnessPhase']) {
      const [e] = scheduled(events, type);
      assert.deepEqual(
        [tsToMs(e.activityTaskScheduledEventAttributes!.startToCloseTimeout), tsToMs(e.activityTaskScheduledEventAttributes!.heartbeatTimeout), tsToMs(e.activityTaskScheduledEventAttributes!.retryPolicy!.initialInterval), tsToMs(e.activityTaskScheduledEventAttributes!.retryPolicy!.maximumInterval)],
        [90_000, 11_000, 1_000, 3_000], type,
      );
    }
    const evaluations = scheduled(events, 'evaluateHarness');
    assert.equal(evaluations.length, 2);
    for (const e of evaluations) {
      const input = decode(e.activityTaskScheduledEventAttributes!.input!.payloads![0]) as { sampling?: unknown };
      assert.deepEqual(input.sampling, { temperature: 0.7, topK: 5 });
    }
  });
});
