// The comparison's claims table on hand-made results: paired per-seed differences and their sign count, a claim
// that holds, one that fails (on the mean, and on the seed count with a positive mean), too few seeds, the paper
// protocol in its own rows, adaptive against fixed on the grid, the levers against the paper, the sweep kept out
// of the main table, the harness search named by the runs' proposer, and the preset agreeing with the plan.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { RunResult } from '../../bench/compare-history';
import { claimsMarkdown, computeClaims, PREREGISTERED, rolloutsToReach, type Claims } from '../../bench/compare-claims';
import { comparisonWallTime, markdownTable, writeResults } from '../../bench/compare-output';
import { aggregate, medianRange } from '../../bench/compare-stats';
import { benchRunConfig, SIZES } from '../../bench/compare-plan';
import { ROOT } from '../workflows/env';

const PRE = PREREGISTERED['three-epochs']!;
const FIXED = PRE.token;
const BUDGET = 15_360;

interface Opts { initial?: number; grid?: [number, number][]; rolloutsUsed?: number; proposer?: string }

/** One finished run; protocol from its token (paper: tokens run under paper, the rest under equal). */
function run(domain: string, method: string, seed: number, final: number, o: Opts = {}): RunResult {
  const protocol = method.startsWith('paper:') ? 'paper' : 'equal';
  const used = o.rolloutsUsed ?? BUDGET;
  const grid = (o.grid ?? []).map(([atRollouts, meanAt8], i) => ({ gridPoint: 2560 * (i + 1), atRollouts, atWeightStep: i, meanAt8 }));
  const initial = o.initial ?? 0.1;
  return {
    domain, method, seed, workflowId: `bench-${domain}-${method.replace(/:/g, '-')}-s${seed}`, status: 'completed',
    initialMeanAt8: initial, bestMeanAt8: Math.max(final, ...grid.map((g) => g.meanAt8)), finalMeanAt8: final,
    rolloutsUsed: used, testRollouts: 0, weightSteps: 0, proposalRounds: 0, wallSeconds: 100, activitySeconds: 90,
    curve: [{ rollouts: 0, meanAt8: initial, label: 'initial' }, ...grid.map((g) => ({ rollouts: g.atRollouts, meanAt8: g.meanAt8, label: 'grid' })), { rollouts: used, meanAt8: final, label: 'final' }],
    input: o.proposer ? { harness: { proposer: { kind: o.proposer } } } : {},
    budget: { protocol, maxRollouts: protocol === 'equal' ? BUDGET : null, totalWeightSteps: 30, spentRollouts: used, unspentRollouts: protocol === 'equal' ? BUDGET - used : null, withinBudget: protocol === 'equal' ? true : null },
    grid: grid.length ? grid : null,
  };
}

const seeds = (domain: string, method: string, finals: number[], o: (seed: number) => Opts = () => ({})) => finals.map((f, seed) => run(domain, method, seed, f, o(seed)));

function fixture(): RunResult[] {
  return [
    // math: WHALE 0.30, 0.32, 0.31 on seeds 0-2.
    ...seeds('math', FIXED, [0.30, 0.32, 0.31], (s) => ({ grid: [[2560, 0.2], [5120, 0.25 + s * 0.01], [7680, 0.3]] })),
    ...seeds('math', 'weights-only', [0.25, 0.26, 0.27]), // +0.05, +0.06, +0.04: holds, +3/−0/=0
    ...seeds('math', 'harness-only', [0.31, 0.35, 0.30], () => ({ initial: 0.1 })), // −0.01, −0.03, +0.01: fails on the mean
    ...seeds('math', 'prompt-only', [0.20, 0.33, 0.32]), // +0.10, −0.01, −0.01: a positive mean, but behind on 2 of 3 seeds: fails
    ...seeds('math', 'stagewise', [0.30, 0.30, 0.30]), // 0, +0.02, +0.01: holds, one tie
    ...seeds('math', 'stagewise-harness-first', [0.2, 0.2]), // seeds 0, 1 only: not enough seeds
    // Adaptive on math: seed 0 reaches 0.30 at the 5,120 grid point (fewer), seed 1 only with its final score at 15,360 (not fewer), seed 2 never.
    run('math', 'whale-adaptive', 0, 0.30, { grid: [[2560, 0.2], [5200, 0.30]] }),
    run('math', 'whale-adaptive', 1, 0.32, { grid: [[2560, 0.2], [5120, 0.31]] }),
    run('math', 'whale-adaptive', 2, 0.29, { grid: [[2560, 0.2], [5120, 0.28]] }),
    // The paper protocol: its own rows, never mixed with the equal runs.
    ...seeds('math', `paper:${FIXED}`, [0.40, 0.41, 0.42]),
    ...seeds('math', 'paper:weights-only', [0.30, 0.31, 0.32]),
    // A sweep configuration (not preregistered).
    ...seeds('math', 'whale-fixed:0.1:3', [0.35, 0.36, 0.37]),
    // search QA: weights-only gains more than harness-only on every seed, where the paper says the harness dominates.
    ...seeds('search-qa', FIXED, [0.30, 0.30, 0.30]),
    ...seeds('search-qa', 'weights-only', [0.25, 0.26, 0.27]),
    ...seeds('search-qa', 'harness-only', [0.15, 0.16, 0.17]),
    // Adaptive on search QA reaches the fixed final early on every seed.
    ...seeds('search-qa', 'whale-adaptive', [0.33, 0.33, 0.33], () => ({ grid: [[2560, 0.31]] })),
  ];
}

const beat = (c: Claims, domain: string, other: string) => {
  const rows = c.beats.filter((b) => b.domain === domain && b.other === other);
  assert.equal(rows.length, 1, `${domain} ${other}`);
  return rows[0];
};

describe('bench compare claims', () => {
  it('paired per-seed differences, sign counts and verdicts: holds, fails, too few seeds', () => {
    const c = computeClaims(fixture(), ['math', 'search-qa'], PRE);
    const wo = beat(c, 'math', 'weights-only');
    assert.deepEqual(wo.paired.map((p) => [p.seed, Number(p.diff.toFixed(6))]), [[0, 0.05], [1, 0.06], [2, 0.04]]);
    assert.deepEqual([wo.signs, wo.verdict, wo.protocol, wo.whale], [{ plus: 3, minus: 0, tie: 0 }, 'holds', 'equal', FIXED]);
    assert.ok(Math.abs(wo.diff!.mean - 0.05) < 1e-9 && Math.abs(wo.whaleFinal!.mean - 0.31) < 1e-9 && Math.abs(wo.otherFinal!.mean - 0.26) < 1e-9);
    const ho = beat(c, 'math', 'harness-only');
    assert.deepEqual([ho.signs, ho.verdict], [{ plus: 1, minus: 2, tie: 0 }, 'fails']);
    const po = beat(c, 'math', 'prompt-only');
    assert.ok(po.diff!.mean > 0, 'a positive mean difference');
    assert.deepEqual([po.signs, po.verdict], [{ plus: 1, minus: 2, tie: 0 }, 'fails'], 'behind on most seeds: fails despite the mean');
    assert.deepEqual([beat(c, 'math', 'stagewise').signs, beat(c, 'math', 'stagewise').verdict], [{ plus: 2, minus: 0, tie: 1 }, 'holds']);
    const few = beat(c, 'math', 'stagewise-harness-first');
    assert.deepEqual([few.paired.length, few.verdict], [2, 'not enough seeds (n<3)']);

    const md = claimsMarkdown(c);
    assert.match(md, /\| math \| equal \| whale-fixed:0\.6:6 \| weights-only \| 0\.3100 ± 0\.0100 \| 0\.2600 ± 0\.0100 \| 0\.0500 ± 0\.0100 \| s0 \+0\.0500, s1 \+0\.0600, s2 \+0\.0400 \| \+3\/−0\/=0 \| holds \|/);
    assert.match(md, /\| math \| equal \| whale-fixed:0\.6:6 \| harness-only \|[^\n]*\| \+1\/−2\/=0 \| \*\*fails\*\* \|/);
    assert.match(md, /\| stagewise-harness-first \|[^\n]*\| \*\*not enough seeds \(n<3\)\*\* \|/);
  });

  it('paper-protocol runs are compared in their own rows, named by protocol', () => {
    const c = computeClaims(fixture(), ['math'], PRE);
    const paper = c.beats.filter((b) => b.protocol === 'paper');
    assert.deepEqual(paper.map((b) => [b.whale, b.other, b.verdict, b.signs.plus]), [[`paper:${FIXED}`, 'paper:weights-only', 'holds', 3]]);
    assert.ok(c.beats.filter((b) => b.protocol === 'equal').every((b) => !b.other.startsWith('paper:')));
    assert.match(claimsMarkdown(c), /\| math \| paper \| paper:whale-fixed:0\.6:6 \| paper:weights-only \|/);
  });

  it('adaptive against fixed: the grid point where adaptive first reaches fixed\'s final score on the same seed', () => {
    const c = computeClaims(fixture(), ['math', 'search-qa'], PRE);
    const math = c.adaptive.find((a) => a.domain === 'math' && a.protocol === 'equal')!;
    assert.deepEqual(math.perSeed.map((s) => [s.seed, s.reachedAt, s.fixedRollouts, s.fewer]), [[0, 5200, BUDGET, true], [1, BUDGET, BUDGET, false], [2, null, BUDGET, false]]);
    assert.deepEqual([math.fewer, math.verdict], [1, 'fails']);
    const qa = c.adaptive.find((a) => a.domain === 'search-qa')!;
    assert.deepEqual([qa.fewer, qa.verdict], [3, 'holds']);
    assert.match(claimsMarkdown(c), /\| math \| equal \| whale-fixed:0\.6:6 \| 0\.3100 ± 0\.0100 \| 15360 ± 0 \| s0 5200 \/ 15360, s1 15360 \/ 15360, s2 never \/ 15360 \| 1\/3 seeds \| \*\*fails\*\* \|/);
    // Without a grid the test curve counts.
    const noGrid = run('math', 'whale-adaptive', 0, 0.2);
    assert.equal(rolloutsToReach(noGrid, 0.1), 0);
    assert.equal(rolloutsToReach(noGrid, 0.2), BUDGET);
    assert.equal(rolloutsToReach(noGrid, 0.3), null);
  });

  it('which lever dominates: the gain over the first test point, checked against the paper where it makes a claim', () => {
    const results = [...fixture(), ...seeds('chess', 'weights-only', [0.11, 0.11, 0.11]), ...seeds('chess', 'harness-only', [0.1, 0.1, 0.1])];
    const c = computeClaims(results, ['math', 'search-qa', 'chess'], PRE);
    const byDomain = Object.fromEntries(c.levers.map((l) => [l.domain, l]));
    // math: weights-only gains 0.15, 0.16, 0.17; harness-only 0.21, 0.25, 0.20: the harness dominates, the paper says weights.
    assert.deepEqual([byDomain.math.dominant, byDomain.math.paper, byDomain.math.verdict, byDomain.math.signs], ['harness', 'weights', 'fails', { plus: 0, minus: 3, tie: 0 }]);
    assert.ok(Math.abs(byDomain.math.gains['weights-only']!.mean - 0.16) < 1e-9);
    assert.deepEqual([byDomain['search-qa'].dominant, byDomain['search-qa'].paper, byDomain['search-qa'].verdict], ['weights', 'harness', 'fails']);
    assert.deepEqual([byDomain.chess.dominant, byDomain.chess.verdict], ['weights', 'no claim in the paper']);
    // And a domain where the data agree with the paper.
    const agree = computeClaims([...seeds('search-qa', 'weights-only', [0.2, 0.2, 0.2]), ...seeds('search-qa', 'harness-only', [0.3, 0.2, 0.4])], ['search-qa'], PRE);
    assert.deepEqual([agree.levers[0].dominant, agree.levers[0].verdict, agree.levers[0].signs], ['harness', 'holds', { plus: 0, minus: 2, tie: 1 }]);
    const few = computeClaims(seeds('math', 'weights-only', [0.2]).concat(seeds('math', 'harness-only', [0.1])), ['math'], PRE);
    assert.deepEqual([few.levers[0].dominant, few.levers[0].verdict], ['not enough seeds (n<3)', 'not enough seeds (n<3)']);
  });

  it('the harness search is named by the runs\' proposer: the catalogue search unless a run config names another', () => {
    assert.match(computeClaims(fixture(), ['math'], PRE).harnessSearch, /built-in catalogue search .*not a coding-agent proposer/);
    const agent = computeClaims([...fixture(), run('math', 'harness-only', 5, 0.3, { proposer: 'coding-agent' })], ['math'], PRE);
    assert.deepEqual(agent.proposerKinds, ['builtin', 'coding-agent']);
    assert.match(agent.harnessSearch, /coding-agent proposer/);
    assert.match(claimsMarkdown(computeClaims([], ['math'], null)), /No configuration was preregistered/);
  });

  it('results.md and results.json carry the claims; sweep configurations leave the main table for the sweep table', async () => {
    const results = fixture();
    const methods = [...new Set(results.map((r) => r.method))];
    const out = mkdtempSync(path.join(tmpdir(), 'whale-claims-'));
    try {
      const planned = results.map((r) => ({ domain: r.domain, method: r.method, seed: r.seed, workflowId: r.workflowId, input: {} }));
      const opts = { domains: ['math', 'search-qa'], seeds: [0, 1, 2], methods, budget: BUDGET, sizes: 'three-epochs' as const, out, parallel: 1, workers: 'none' as const, plan: false };
      await writeResults(out, opts, planned, results, []);
      const file = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as { claims: Claims };
      assert.equal(file.claims.preregistered?.token, FIXED);
      assert.deepEqual(file.claims.beats.filter((b) => b.domain === 'math' && b.protocol === 'equal').map((b) => [b.other, b.verdict]), [
        ['weights-only', 'holds'], ['harness-only', 'fails'], ['prompt-only', 'fails'], ['stagewise', 'holds'], ['stagewise-harness-first', 'not enough seeds (n<3)'],
      ]);
      assert.deepEqual(file.claims.sweep.map((s) => [s.domain, s.method, s.protocol, s.signs]), [['math', 'whale-fixed:0.1:3', 'equal', { plus: 3, minus: 0, tie: 0 }]]);
      const md = readFileSync(path.join(out, 'results.md'), 'utf8');
      const [main, rest] = md.split('## Claims');
      assert.ok(rest, 'results.md has the claims section');
      assert.doesNotMatch(main, /whale-fixed:0\.1:3/, 'the sweep configuration is not in the main table');
      assert.match(main, /\| whale-fixed:0\.6:6 \| equal \| 3 \|/);
      assert.match(rest, /### Sweep: WHALE configurations that were not preregistered[\s\S]*\| math \| whale-fixed:0\.1:3 \| equal \| 3 \|/);
      assert.match(md, /Harness search: the built-in catalogue search/);
      const svg = readFileSync(path.join(out, 'test-mean-at-8-math.svg'), 'utf8');
      assert.match(svg, /bands: min to max over seeds/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('the comparison\'s wall time: invocations summed, a stopped one to its last finished run, beside the runs\' own', () => {
    const inv = (date: string, finishedAt: string | null, lastRunAt?: string | null) => ({ command: 'whale bench compare', date, finishedAt, lastRunAt, started: 0, attached: 0, skipped: 0, failed: 0 });
    const line = comparisonWallTime([
      inv('2026-12-01T00:00:00Z', '2026-12-01T01:30:00Z'), inv('2026-12-01T02:00:00Z', null), inv('2026-12-01T03:00:00Z', '2026-12-01T04:00:00Z'),
      inv('2026-12-01T05:00:00Z', null, '2026-12-01T05:45:00Z'), inv('2026-12-01T06:00:00Z', null, null),
    ], fixture().slice(0, 36));
    assert.equal(line, 'Comparison wall time: 3.25 h over 3 invocations (each from its start to its end; 1 stopped invocation to the last run it saw finish; summed; 2 stopped before a run finished not counted); the finished runs\' own wall times sum to 1.00 h.');
  });

  it('one run\'s wall time is the median over seeds with its range: a run that shared the machine does not drag it', () => {
    assert.deepEqual(medianRange([511, 2825, 994]), { median: 994, min: 511, max: 2825 });
    assert.deepEqual(medianRange([363, 675]), { median: 519, min: 363, max: 675 });
    assert.equal(medianRange([]), null);
    const walls = [511, 2825, 994];
    const rs = seeds('math', FIXED, [0.30, 0.32, 0.31]).map((r, i) => ({ ...r, wallSeconds: walls[i] }));
    const one = { ...run('math', 'weights-only', 0, 0.25), wallSeconds: 363.4 };
    const table = markdownTable(aggregate([...rs, one], [FIXED, 'weights-only'], ['math']).rows, { math: 0.25 });
    assert.match(table, /\| wall time per run \(s\), median \(range\) \|/);
    assert.match(table, new RegExp(`\\| ${FIXED.replace(/\./g, '\\.')} \\| equal \\| 3 \\|.*\\| 994 \\(511-2825\\) \\|$`, 'm'));
    assert.match(table, /\| weights-only \| equal \| 1 \|.*\| 363 \|$/m, 'one seed: its wall time alone');
  });

  it('the preregistered token is the preset\'s run', () => {
    const preset = JSON.parse(readFileSync(path.join(ROOT, PRE.preset), 'utf8')) as Record<string, Record<string, unknown>>;
    const planned = benchRunConfig(PRE.token, 'math', 0, BUDGET, SIZES['three-epochs']) as Record<string, Record<string, unknown>>;
    assert.equal(preset.method as unknown, planned.method as unknown);
    for (const key of ['switching', 'weight', 'harness', 'test'] as const) assert.deepEqual(planned[key], preset[key], key);
    assert.deepEqual([planned.budget.protocol, planned.budget.maxRollouts, planned.budget.totalWeightSteps], [preset.budget.protocol, preset.budget.maxRollouts, preset.budget.totalWeightSteps]);
    assert.equal(PRE.protocol, preset.budget.protocol);
  });
});
