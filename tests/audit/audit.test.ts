// The audit recomputes every phase switch from the recorded signals with the pure rules and must agree with
// what the workflow decided; a tampered signal must make it disagree. The report renders its plots as SVG,
// names the phases on them, and links the run's Web UI page where the server's UI is known.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { buildTimeline, readHistoryFiles } from '../../audit/timeline';
import { explainPhases } from '../../audit/explain';
import { plotSpecs, summaryMarkdown, writeReport } from '../../audit/report';
import { webUiRunUrl } from '../../audit/web-ui';
import { loadTemporalConfig } from '../../temporal.config';
import { ROOT } from '../workflows/env';

const H = path.join(ROOT, 'tests', 'histories', 'v1');

describe('audit from recorded histories', () => {
  // 'demo' is a real `npm run demo` run on a fresh clone (real model, proposer and sandbox workers).
  // 'equal-budget-grid' runs under protocol 'equal': its last weight phase goes on past the fixed schedule
  // (the rest cannot pay a harness phase) and ends when the rest cannot pay a weight step.
  // 'equal-budget-grid-only' is the same run under the grid-only rule (D_test scored only at the grid points).
  for (const name of ['patience', 'fixed-schedule', 'demo', 'equal-budget-grid', 'equal-budget-grid-only']) {
    it(`explains every phase switch of ${name} exactly as the workflow decided`, () => {
      const t = buildTimeline(name, readHistoryFiles([path.join(H, `${name}.json`)]));
      assert.equal(t.status, 'completed');
      const phases = explainPhases(t);
      assert.equal(phases.length, t.recordedPhases.length);
      assert.ok(phases.length >= 3);
      for (const p of phases) assert.equal(p.matches, true, `${p.kind} phase ${p.index}: recomputed "${p.rule}" vs recorded "${p.recordedRule}"`);
    });
  }

  it('reads a continue-as-new chain as one run', () => {
    const files = readdirSync(H).filter((f) => f.startsWith('continue-as-new-run')).sort().map((f) => path.join(H, f));
    const t = buildTimeline('can', readHistoryFiles(files));
    assert.equal(t.runs, files.length);
    assert.equal(t.steps.length, 14);
    assert.deepEqual(t.steps.map((s) => s.step), Array.from({ length: 14 }, (_, i) => i + 1));
    assert.equal(explainPhases(t)[0].matches, true);
  });

  it('reports a mismatch when a recorded signal was tampered with', () => {
    const raw = JSON.parse(readFileSync(path.join(H, 'patience.json'), 'utf8'));
    const history = historyFromJSON(raw);
    // Raise the signal of step 6 (which the rule saw as no improvement) so the phase would not have switched there.
    let patched = 0;
    for (const e of history.events ?? []) {
      const r = e.activityTaskCompletedEventAttributes?.result?.payloads?.[0];
      if (!r?.data) continue;
      const v = JSON.parse(Buffer.from(r.data).toString('utf8')) as { meanReward?: number; promptIds?: unknown };
      if (v.promptIds !== undefined && patched++ >= 3) {
        v.meanReward = 0.99;
        r.data = Buffer.from(JSON.stringify(v));
      }
    }
    const phases = explainPhases(buildTimeline('tampered', [history]));
    assert.ok(phases.some((p) => p.matches === false), 'the tampered history must not match the recorded decisions');
  });

  it('recomputes the budget gates from the recorded spend: a tampered rollout count makes it disagree', () => {
    const raw = JSON.parse(readFileSync(path.join(H, 'equal-budget-grid.json'), 'utf8'));
    const history = historyFromJSON(raw);
    // Step 4's batch recorded 20 rollouts; recorded as 0, the rest after step 7 would still pay a weight step.
    let batches = 0;
    for (const e of history.events ?? []) {
      const r = e.activityTaskCompletedEventAttributes?.result?.payloads?.[0];
      if (!r?.data) continue;
      const v = JSON.parse(Buffer.from(r.data).toString('utf8')) as { rollouts?: number; promptIds?: unknown };
      if (v.promptIds !== undefined && ++batches === 4) {
        v.rollouts = 0;
        r.data = Buffer.from(JSON.stringify(v));
      }
    }
    const phases = explainPhases(buildTimeline('tampered-budget', [history]));
    const last = phases[phases.length - 1];
    assert.equal(last.kind, 'weight');
    assert.equal(last.matches, false, `recomputed "${last.rule}" vs recorded "${last.recordedRule}"`);
    // The untampered run: the refused switch at step 6 is in the signals, with the gate's numbers.
    const t = buildTimeline('equal-budget-grid', readHistoryFiles([path.join(H, 'equal-budget-grid.json')]));
    const w2 = explainPhases(t)[2];
    assert.match(w2.trace.join('\n'), /step 6: .*fixed schedule: 3 steps .*harness phase not affordable: rest 30 < round 0 \(8\) \+ 2 proposal rounds at cap \(16 each\) \+ reserve 20 = 60: the weight phase goes on/);
    assert.match(w2.rule, /^budget reached: 7\/10 weight steps, 180 rollouts \(budget spent: rest 10 rollouts < one weight step of 20\)/);
  });

  it('explains a weight phase that ends before its first step: a harness phase ended above the rollout cap', () => {
    // The recorded run cut after its harness phase (100 rollouts) under protocol none with a cap of 90: the
    // workflow checks the budget before the next step and ends the weight phase with none (and the run).
    const t = buildTimeline('equal-budget-grid', readHistoryFiles([path.join(H, 'equal-budget-grid.json')]));
    assert.ok(t.config);
    t.config.budget = { ...t.config.budget, protocol: 'none', maxRollouts: 90 };
    t.patches = [];
    t.steps = t.steps.slice(0, 3);
    t.recordedPhases = [...t.recordedPhases.slice(0, 2), { ...t.recordedPhases[2], startStep: 3, endStep: 3, rule: 'budget reached before step 4' }];
    const phases = explainPhases(t);
    assert.deepEqual(phases.map((p) => [p.kind, p.index, p.startStep, p.endStep, p.matches]), [['weight', 1, 0, 3, true], ['harness', 1, 3, 3, true], ['weight', 2, 3, 3, true]]);
    assert.equal(phases[2].rule, 'budget reached before step 4: 3/10 weight steps, 100 rollouts of 90');
  });

  it('counts epochs over the weight.taskLimit subset, not the whole D_weight', () => {
    const t = buildTimeline('fixed-schedule', readHistoryFiles([path.join(H, 'fixed-schedule.json')]));
    assert.ok(t.config && t.splitSizes);
    // The same run as if it had trained on a 100-prompt subset of a 1,000-prompt D_weight: 10 steps per epoch still.
    t.splitSizes.weight = 1000;
    t.config.weight.taskLimit = 100;
    for (const p of explainPhases(t)) assert.equal(p.matches, true, `${p.kind} phase ${p.index}: "${p.rule}" vs "${p.recordedRule}"`);
    t.config.weight.taskLimit = null;
    assert.equal(explainPhases(t)[0].matches, false, 'over the whole 1,000 prompts the first phase would run 30 steps');
  });

  it('shows the protocol, the budget use and the grid evaluations (grid point beside the exact count)', () => {
    const t = buildTimeline('equal-budget-grid', readHistoryFiles([path.join(H, 'equal-budget-grid.json')]));
    const md = summaryMarkdown(t, explainPhases(t));
    assert.match(md, /\| equal \| 190 \| 10 \| 180 \| 10 \| yes \|/);
    assert.match(md, /\| 50 \| 60 \(later\) \| 3 \| 0\.3 \|/);
    assert.match(md, /\| 100 \| 100 \| 3 \| 0\.3 \|/);
    assert.match(md, /\| 150 \| 160 \(later\) \| 6 \| 0\.5 \|/);
    assert.doesNotMatch(md, /DOES NOT MATCH/);
    const old = summaryMarkdown(...((tl) => [tl, explainPhases(tl)] as const)(buildTimeline('fixed-schedule', readHistoryFiles([path.join(H, 'fixed-schedule.json')]))));
    assert.match(old, /\| none \| - \| 9 \| 268 \| - \| - \|/, 'a run from before the protocol: protocol none, no rollout cap');
    assert.doesNotMatch(old, /Evaluation grid/);
  });

  it('shows the kept and dropped model calls of every weight step (a dash where an older run did not record them)', () => {
    const t = buildTimeline('fixed-schedule', readHistoryFiles([path.join(H, 'fixed-schedule.json')]));
    const first = t.steps[0];
    assert.ok(first.fineTune, 'the recorded run has fine-tune results');
    assert.match(summaryMarkdown(t, explainPhases(t)), new RegExp(`\\| ${first.step} \\| [^|]+ \\| ${first.accepted}/${first.rollouts} \\| - \\| - \\|`));
    first.fineTune = { ...first.fineTune, keptCalls: 57, droppedCalls: 3 };
    assert.match(summaryMarkdown(t, explainPhases(t)), new RegExp(`\\| ${first.step} \\| [^|]+ \\| ${first.accepted}/${first.rollouts} \\| 57 \\| 3 \\| ${first.fineTune.minibatches} \\|`));
  });

  it('writes summary.md, three SVG plots and an HTML page', async () => {
    const out = mkdtempSync(path.join(tmpdir(), 'whale-audit-'));
    try {
      const t = buildTimeline('fixed-schedule', readHistoryFiles([path.join(H, 'fixed-schedule.json')]));
      const files = await writeReport(t, explainPhases(t), out);
      assert.deepEqual(files.sort(), ['harness-candidates.svg', 'index.html', 'summary.md', 'test-mean-at-8.svg', 'training-reward.svg']);
      const svg = readFileSync(path.join(out, 'test-mean-at-8.svg'), 'utf8');
      assert.match(svg, /^<svg/);
      assert.match(svg, /mean@8/);
      const md = readFileSync(path.join(out, 'summary.md'), 'utf8');
      assert.match(md, /matches the recorded decision/);
      assert.doesNotMatch(md, /DOES NOT MATCH/);
      assert.match(md, /accepted harness: `r2-c1`/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('names the phases on the plots as the run named them (weight-1, harness-1, ...)', async () => {
    const t = buildTimeline('fixed-schedule', readHistoryFiles([path.join(H, 'fixed-schedule.json')]));
    const specs = plotSpecs(t, explainPhases(t)) as Record<string, { layer?: Array<{ data?: { values: Array<{ kind: string }> }; layer?: Array<{ mark: { type: string } }> }> }>;
    const bands = specs['test-mean-at-8'].layer?.[0];
    assert.deepEqual(bands?.data?.values.map((b) => b.kind), ['weight-1', 'harness-1', 'weight-2', 'harness-2', 'weight-3']);
    assert.deepEqual(bands?.layer?.map((l) => l.mark.type), ['rect', 'text'], 'a shaded band and its name');
  });

  it('links the run to its Web UI page: the dev server\'s UI, Temporal Cloud, or none when unknown', () => {
    const dev = loadTemporalConfig({}, {});
    assert.equal(webUiRunUrl(dev, 'my run/1'), 'http://127.0.0.1:8233/namespaces/default/workflows/my%20run%2F1');
    const custom = loadTemporalConfig({}, { WHALE_TEMPORAL_ADDRESS: 'localhost:7301', WHALE_DEV_PORT: '7301', WHALE_DEV_UI_PORT: '8301', WHALE_TEMPORAL_NAMESPACE: 'ml' });
    assert.equal(webUiRunUrl(custom, 'r'), 'http://127.0.0.1:8301/namespaces/ml/workflows/r');
    const cloud = loadTemporalConfig({}, { WHALE_TEMPORAL_ADDRESS: 'ml.a2b3c.tmprl.cloud:7233', WHALE_TEMPORAL_NAMESPACE: 'ml.a2b3c' });
    assert.equal(webUiRunUrl(cloud, 'r'), 'https://cloud.temporal.io/namespaces/ml.a2b3c/workflows/r');
    assert.equal(webUiRunUrl(loadTemporalConfig({}, { WHALE_TEMPORAL_ADDRESS: 'temporal.internal:7233' }), 'r'), null, 'a cluster whose UI address is not known');
    const t = buildTimeline('fixed-schedule', readHistoryFiles([path.join(H, 'fixed-schedule.json')]));
    assert.match(summaryMarkdown(t, explainPhases(t), {}, 'http://127.0.0.1:8233/namespaces/default/workflows/fixed-schedule'), /In the Temporal Web UI: <http:\/\/127\.0\.0\.1:8233\/namespaces\/default\/workflows\/fixed-schedule>/);
    assert.doesNotMatch(summaryMarkdown(t, explainPhases(t)), /Web UI/);
  });
});
