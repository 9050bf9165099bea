// The tracker-neutral view of a run, from recorded histories (no server): every weight step and test
// evaluation becomes a metric point with the right step, the config becomes flat params, and a history's
// series are a prefix of a longer history's (what lets an exporter add only new points). Also the workers'
// metrics-address setting.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { buildTimeline, readHistoryFiles } from '../../audit/timeline';
import { flattenParams, METRIC_KEYS, trackedRun } from '../../track/run-metrics';
import { metricsAddress } from '../../workers/metrics';
import { unloggedPoints } from '../../track/mlflow';
import { ROOT } from '../workflows/env';

const H = path.join(ROOT, 'tests', 'histories', 'v1');

describe('a run as a tracker sees it', () => {
  it('turns a recorded run into params, tags and metric series equal to its timeline', () => {
    const histories = readHistoryFiles([path.join(H, 'fixed-schedule.json')]);
    const t = buildTimeline('fixed-schedule', histories);
    const run = trackedRun(t, histories, { 'whale.phase': 'done' });
    assert.equal(run.status, 'finished');
    assert.ok(run.endTime && run.endTime >= run.startTime && run.startTime > 1.6e12, `times ${run.startTime}..${run.endTime}`);
    const series = (key: string) => run.metrics.filter((m) => m.key === key);
    assert.deepEqual(series(METRIC_KEYS.reward).map((m) => [m.step, m.value]), t.steps.filter((s) => s.meanReward !== null).map((s) => [s.step, s.meanReward]));
    assert.deepEqual(series(METRIC_KEYS.accepted).map((m) => m.value), t.steps.map((s) => s.accepted));
    assert.deepEqual(series(METRIC_KEYS.testMeanAt8).map((m) => [m.step, m.value]), t.tests.map((e) => [e.atRollouts, e.meanAt8]));
    assert.ok(t.tests.length >= 2 && t.steps.length >= 2);
    // Timestamps follow the history: never decreasing along a series.
    for (const key of Object.values(METRIC_KEYS)) {
      const ts = series(key).map((m) => m.timestamp);
      assert.deepEqual(ts, [...ts].sort((a, b) => a - b), key);
    }
    // The cycle of each step, from the history as it grew, equals the cycle of the weight phase that recorded it.
    const weightPhases = t.recordedPhases.filter((r) => r.kind === 'weight');
    assert.ok(new Set(weightPhases.map((p) => p.cycle)).size >= 2);
    for (const p of weightPhases) {
      const inPhase = series(METRIC_KEYS.cycle).filter((x) => x.step > p.startStep && x.step <= p.endStep);
      assert.equal(inPhase.length, p.endStep - p.startStep);
      for (const m of inPhase) assert.equal(m.value, p.cycle, `step ${m.step}`);
    }
    assert.equal(run.params.method, t.config!.method);
    assert.equal(run.params['weight.promptsPerStep'], String(t.config!.weight.promptsPerStep));
    assert.equal(run.tags['whale.workflow_id'], 'fixed-schedule');
    assert.equal(run.tags['whale.phase'], 'done');
  });

  it('the series of a shorter history are a prefix of the longer one (a chain read run by run)', () => {
    const files = ['continue-as-new-run0.json', 'continue-as-new-run1.json', 'continue-as-new-run2.json', 'continue-as-new-run3.json'].map((f) => path.join(H, f));
    const all = readHistoryFiles(files);
    const full = trackedRun(buildTimeline('can', all), all);
    const part = trackedRun(buildTimeline('can', all.slice(0, 2)), all.slice(0, 2));
    assert.equal(part.status, 'running', 'a chain cut after a continue-as-new is still running');
    assert.ok(part.metrics.length > 0 && part.metrics.length < full.metrics.length);
    for (const key of new Set(part.metrics.map((m) => m.key))) {
      const a = part.metrics.filter((m) => m.key === key).map((m) => m.step);
      const b = full.metrics.filter((m) => m.key === key).map((m) => m.step);
      assert.deepEqual(b.slice(0, a.length), a, key);
    }
  });

  it('a history cut anywhere (a run followed live) gives a prefix of the full series, values included', () => {
    const [full] = readHistoryFiles([path.join(H, 'fixed-schedule.json')]);
    const whole = trackedRun(buildTimeline('f', [full]), [full]);
    const events = full.events ?? [];
    for (const cut of [Math.floor(events.length / 3), Math.floor(events.length / 2), Math.floor((events.length * 4) / 5)]) {
      const part = { ...full, events: events.slice(0, cut) };
      const run = trackedRun(buildTimeline('f', [part]), [part]);
      assert.equal(run.status, 'running');
      for (const key of Object.values(METRIC_KEYS)) {
        const a = run.metrics.filter((m) => m.key === key).map((m) => [m.step, m.value]);
        const b = whole.metrics.filter((m) => m.key === key).map((m) => [m.step, m.value]);
        assert.deepEqual(b.slice(0, a.length), a, `${key} cut at event ${cut}`);
      }
    }
  });

  it('flattens nested config into dotted keys with JSON values for arrays', () => {
    assert.deepEqual(flattenParams({ a: { b: 1, c: 'x' }, d: [1, 2], e: null }), { 'a.b': '1', 'a.c': 'x', d: '[1,2]', e: 'null' });
  });
});

describe('which points an export adds to an MLflow run', () => {
  const p = (step: number, value: number) => ({ key: 'test/mean_at_8', step, value, timestamp: 1 });
  it('adds only the points MLflow lacks, wherever they fall in the series (a reused evaluation listed later)', () => {
    const held = [p(0, 0.2), p(60, 0.3), p(160, 0.4)];
    const points = [p(0, 0.2), p(60, 0.3), p(100, 0.3), p(160, 0.4), p(180, 0.5)];
    const d = unloggedPoints(points, held, 'MLflow run r');
    assert.deepEqual(d.fresh.map((x) => [x.step, x.value]), [[100, 0.3], [180, 0.5]]);
    assert.equal(d.already, 3);
    assert.deepEqual(unloggedPoints(points, points, 'MLflow run r'), { fresh: [], already: 5 }, 'a second export adds nothing');
  });
  it('counts repeated points (two evaluations at one rollout count with one score)', () => {
    const d = unloggedPoints([p(10, 0.5), p(10, 0.5)], [p(10, 0.5)], 'MLflow run r');
    assert.deepEqual([d.fresh.length, d.already], [1, 1]);
  });
  it('refuses an MLflow run holding a point the run does not have, saying what to do', () => {
    assert.throws(() => unloggedPoints([p(0, 0.2)], [p(0, 0.2), p(50, 0.9)], 'MLflow run r'),
      /MLflow run r holds test\/mean_at_8 = 0\.9 at step 50, which the run's history does not have: .*delete the run in MLflow and export again/);
  });
});

describe('the workers\' metrics address', () => {
  it('is off by default; the option beats the per-kind variable, which beats the shared one', () => {
    assert.equal(metricsAddress('model', undefined, {}), null);
    assert.deepEqual(metricsAddress('model', undefined, { WHALE_METRICS_ADDRESS: '0.0.0.0:9464' }), { bindAddress: '0.0.0.0:9464', source: 'WHALE_METRICS_ADDRESS' });
    assert.deepEqual(metricsAddress('model', undefined, { WHALE_METRICS_ADDRESS: '0.0.0.0:9464', WHALE_METRICS_ADDRESS_MODEL: '127.0.0.1:9465' }), { bindAddress: '127.0.0.1:9465', source: 'WHALE_METRICS_ADDRESS_MODEL' });
    assert.deepEqual(metricsAddress('proposer', '[::1]:9466', { WHALE_METRICS_ADDRESS: '0.0.0.0:9464' }), { bindAddress: '[::1]:9466', source: '--metrics-address' });
    assert.deepEqual(metricsAddress('proposer', 'localhost:9467', {}), { bindAddress: '127.0.0.1:9467', source: '--metrics-address' });
  });

  it('refuses a malformed address naming where it came from and the form to use', () => {
    assert.throws(() => metricsAddress('model', '9464', {}), /--metrics-address must be host:port with an IP address \(e\.g\. 127\.0\.0\.1:9464.*got '9464'/);
    assert.throws(() => metricsAddress('model', undefined, { WHALE_METRICS_ADDRESS_MODEL: '127.0.0.1:99999' }), /WHALE_METRICS_ADDRESS_MODEL must be host:port/);
    assert.throws(() => metricsAddress('model', 'example.com:9464', {}), /must be host:port with an IP address/);
  });
});
