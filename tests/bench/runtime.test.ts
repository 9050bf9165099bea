// `whale bench runtime`, the parts that need no CPU time: the orchestration overhead from a history
// (hand-made histories with known intervals, and the recorded demo), the PyTorch part's skip message, generation
// timed at a (tiny) rollout batch's shape in the project and in PyTorch when installed, and the rollout batch
// breakdown on small real batches (embedded sampler, real sandbox).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { readHistoryFiles } from '../../audit/timeline';
import { DEFAULT_OVERHEAD_HISTORY, orchestrationOverhead, rolloutGenerationTokensPerSec, runTorch, TORCH_INSTALL } from '../../bench/runtime';
import { spawnSync } from 'node:child_process';
import { ROOT } from '../workflows/env';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DEMO_HARNESS_FIXTURE, formatRolloutBreakdown, ROLLOUT_PARTS, rolloutBreakdown } from '../../bench/rollout-breakdown';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { SandboxPool } from '../../harness-sandbox/pool';
import { createEmbeddedSampler } from '../../backends/embedded-sampler';
import { createHarnessLoader } from '../../activities/harness-loader';
import { createModelActivities } from '../../activities/model-activities';
import type { RolloutBatchResult } from '../../activities/types';
import { ROLLOUT_LIMITS } from '../../training/corpus';
import { basePolicyOf, createDomainCache, seedHarnessOf } from '../../workers/domain-cache';
import type { RolloutTimings } from '../../agent/loop';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
// Plain numbers where the generated types say Long (protobufjs accepts both at run time).
const at = (s: number) => ({ seconds: s, nanos: 0 }) as unknown as NonNullable<HistoryEvent['eventTime']>;
const ev = (e: Record<string, unknown>) => e as HistoryEvent;

/** A history: start at 0 s, then activities as [scheduled, started, closed] seconds, closed at `end`. */
function history(activities: [number, number, number][], end: number | null): History {
  const events: HistoryEvent[] = [ev({ eventId: 1, eventTime: at(0), workflowExecutionStartedEventAttributes: {} })];
  let id = 2;
  const rows = activities.map(([s, st, c]) => ({ s, st, c, sid: 0 }));
  const timeline: { t: number; make: () => HistoryEvent }[] = [];
  for (const r of rows) {
    timeline.push({ t: r.s, make: () => ((r.sid = id), ev({ eventId: id, eventTime: at(r.s), activityTaskScheduledEventAttributes: {} })) });
    timeline.push({ t: r.st, make: () => ev({ eventId: id, eventTime: at(r.st), activityTaskStartedEventAttributes: { scheduledEventId: r.sid } }) });
    timeline.push({ t: r.c, make: () => ev({ eventId: id, eventTime: at(r.c), activityTaskCompletedEventAttributes: { scheduledEventId: r.sid } }) });
  }
  timeline.sort((a, b) => a.t - b.t);
  for (const e of timeline) {
    events.push(e.make());
    id++;
  }
  if (end !== null) events.push(ev({ eventId: id, eventTime: at(end), workflowExecutionCompletedEventAttributes: {} }));
  return { events };
}

describe('orchestration overhead from a history', () => {
  it('is the share of wall time outside activity executions; schedule-to-start waits count as overhead', () => {
    const o = orchestrationOverhead([history([[1, 2, 5], [5, 6, 9]], 10)], 'hand-made');
    assert.equal(o.wallSeconds, 10);
    assert.equal(o.activitySeconds, 6);
    assert.equal(o.scheduleToStartSeconds, 2);
    assert.equal(o.activities, 2);
    assert.equal(o.maxConcurrent, 1);
    assert.ok(Math.abs(o.overheadFraction - 0.4) < 1e-12);
  });

  it('counts overlapping activities once and reports the concurrency', () => {
    const o = orchestrationOverhead([history([[0, 1, 6], [0, 2, 8]], 10)], 'parallel');
    assert.equal(o.activitySeconds, 7);
    assert.equal(o.maxConcurrent, 2);
    assert.ok(Math.abs(o.overheadFraction - 0.3) < 1e-12);
  });

  it('spans a continue-as-new chain and refuses a run that has not finished', () => {
    const first = history([[1, 1, 4]], null);
    const second = history([[0, 0, 2]], 3);
    second.events!.forEach((e) => (e.eventTime = at(Number(e.eventTime!.seconds) + 5)));
    const o = orchestrationOverhead([first, second], 'chain');
    assert.equal(o.wallSeconds, 8);
    assert.equal(o.activitySeconds, 5);
    assert.throws(() => orchestrationOverhead([history([[1, 2, 3]], null)], 'open run'), /open run: the run has not completed/);
  });

  it('measures the recorded demo run (sequential: one activity at a time)', (t) => {
    const o = orchestrationOverhead(readHistoryFiles([path.join(ROOT, DEFAULT_OVERHEAD_HISTORY)]), 'demo');
    assert.equal(o.maxConcurrent, 1);
    assert.ok(o.activities > 10);
    assert.ok(o.overheadFraction > 0 && o.overheadFraction < 1);
    t.diagnostic(`demo: wall ${o.wallSeconds.toFixed(1)} s, in activities ${o.activitySeconds.toFixed(1)} s, overhead ${(100 * o.overheadFraction).toFixed(2)} %`);
  });
});

describe('the PyTorch comparison', () => {
  it('is skipped with the install command when python or torch is missing', () => {
    const r = runTorch('/nonexistent/python3', 1, 1, 1);
    assert.equal(r.result, null);
    assert.ok(r.reason?.includes(TORCH_INSTALL), r.reason ?? '');
  });

  it('times generation at a rollout batch: shared prompts, a prefill per distinct prompt (project and PyTorch)', async (t) => {
    const shape = { prompts: 3, samplesPerPrompt: 4, newTokens: 5 };
    const g = await rolloutGenerationTokensPerSec(1, shape, 1);
    assert.equal(g.rows, 12);
    assert.ok(g.median > 0 && g.best >= g.median, JSON.stringify(g));
    const py = path.join(ROOT, '.tools', 'hf-venv', 'bin', 'python');
    if (!existsSync(py)) return t.skip(`no PyTorch at ${py}`);
    const tiny = { vocabSize: 264, contextLength: 64, dModel: 32, nLayers: 2, nHeads: 2, layerNormEps: 1e-5 };
    const r = spawnSync(py, [path.join(ROOT, 'scripts', 'bench', 'torch_gpt.py'), '--config', JSON.stringify(tiny), '--threads', '1', '--rows', '2', '--seq', '8',
      '--steps', '1', '--gen-batch', '2', '--prompt-len', '4', '--new-tokens', '3', '--gen-reps', '1', '--rollout-prompts', '2', '--rollout-samples', '3', '--rollout-reps', '1'], { encoding: 'utf8' });
    const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
    assert.ok(line, r.stderr.slice(-2000));
    const res = JSON.parse(line.slice(7)) as { rollout: { median: number; best: number } | null };
    assert.ok(res.rollout && res.rollout.median > 0, line);
  });
});

describe('the rollout batch breakdown', () => {
  it('splits real rollout batches (h0 and the frozen demo harness) into parts that add up to the batch', async (t) => {
    const b = await rolloutBreakdown({ threads: 1, prompts: 2, samplesPerPrompt: 2, reps: 1 });
    assert.equal(b.length, 2);
    for (const r of b) {
      assert.equal(r.rollouts, 4);
      assert.equal(r.reps.length, 1);
      const sum = ROLLOUT_PARTS.reduce((a, k) => a + r.medianMs[k], 0);
      assert.ok(Math.abs(sum - r.medianMs.totalMs) < 1e-6, `${r.harness}: parts ${sum} vs total ${r.medianMs.totalMs}`);
      for (const k of ROLLOUT_PARTS) assert.ok(r.medianMs[k] >= 0, `${r.harness}: ${k} = ${r.medianMs[k]}`);
      assert.ok(r.medianMs.samplingMs > 0 && r.medianMs.storageMs > 0 && r.medianMs.tokenizeMs > 0, JSON.stringify(r.medianMs));
    }
    // h0 has no hooks (no sandbox call); the accepted harness overrides parsing and feedback.
    assert.equal(b[0].medianMs.sandboxMs, 0);
    assert.ok(b[1].medianMs.sandboxMs > 0);
    const table = formatRolloutBreakdown(b);
    assert.match(table.join('\n'), /sampling \(model generate\)[\s\S]*sandbox calls[\s\S]*batch total/);
    t.diagnostic(table.join('\n'));
  });

  it('timing a batch changes none of its results (same trajectories with and without the accumulator)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'whale-rollout-timing-'));
    const store = new DirectoryArtifactStore(dir);
    const sampler = createEmbeddedSampler({ store, threads: 1, maxBatchRows: 64 });
    const sandbox = new SandboxPool({ processes: 1 });
    const harnesses = createHarnessLoader({ store, sandbox });
    try {
      const timed: RolloutTimings[] = [];
      const deps = {
        store, sampler, trainer: { fineTuneStep: () => Promise.reject(new Error('unused')) }, harnesses, limits: ROLLOUT_LIMITS,
        domain: createDomainCache(), basePolicy: basePolicyOf, seedHarness: seedHarnessOf,
      };
      const plain = createModelActivities(deps);
      const withTimings = createModelActivities({ ...deps, onRolloutTimings: (_l, x) => timed.push(x) });
      const input = {
        runId: 'timing', domain: 'math', step: 1, seed: 3, checkpoint: await store.put('checkpoint', basePolicyOf('math')),
        harness: await store.put('harness', readFileSync(DEMO_HARNESS_FIXTURE, 'utf8')), cursor: { epoch: 0, offset: 0 },
        prompts: 3, samplesPerPrompt: 2, sampling: { temperature: 1, topK: 20 }, acceptThreshold: 0.5,
      };
      const a = (await new MockActivityEnvironment().run(plain.rolloutBatch, input)) as RolloutBatchResult;
      const b = (await new MockActivityEnvironment().run(withTimings.rolloutBatch, input)) as RolloutBatchResult;
      assert.equal(timed.length, 1);
      assert.ok(timed[0].sandboxMs > 0 && timed[0].totalMs > timed[0].samplingMs);
      assert.equal(b.trajectories.sha256, a.trajectories.sha256);
      assert.deepEqual(b, a);
    } finally {
      await sampler.close();
      await harnesses.close();
      await sandbox.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
