// `whale bench runtime`, the parts that need no CPU time: the orchestration overhead from a history
// (hand-made histories with known intervals, and the recorded demo), and the PyTorch part's skip message.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { readHistoryFiles } from '../../audit/timeline';
import { DEFAULT_OVERHEAD_HISTORY, orchestrationOverhead, runTorch, TORCH_INSTALL } from '../../bench/runtime';
import { ROOT } from '../workflows/env';

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
});
