// The comparison's results folder: results.json, results.md (the tables, each run's protocol and budget use, the
// invocations) and one Vega-Lite SVG per domain (test mean@8 against rollouts, grid evaluations marked). Written atomically.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../store/artifact-store';
import { renderSvg } from '../audit/report';
import { expandRunConfig } from '../workflows/run-config';
import { weightStepRollouts } from '../workflows/decisions/ledger';
import { SIZES, type BenchSizes, type CompareOptions, type PlannedRun } from './compare-plan';
import type { RunResult } from './compare-history';
import { aggregate, runProtocol, type meanStd, type medianRange, type TableRow } from './compare-stats';
import { claimsMarkdown, computeClaims, isSweep, PREREGISTERED, type Claims } from './compare-claims';

export const fmt = (x: number | null | undefined, d = 4) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));

const pm = (s: ReturnType<typeof meanStd>, d = 4) => (s ? `${s.mean.toFixed(d)} ± ${s.std.toFixed(d)}` : '-');
const medRange = (s: ReturnType<typeof medianRange>) => (!s ? '-' : s.min === s.max ? s.median.toFixed(0) : `${s.median.toFixed(0)} (${s.min.toFixed(0)}-${s.max.toFixed(0)})`);

export function markdownTable(rows: TableRow[], peaks: Record<string, number | null>): string {
  const lines: string[] = [];
  for (const domain of [...new Set(rows.map((r) => r.domain))]) {
    lines.push(`### ${domain}`, '', `weights-only peak (mean over seeds of its best test mean@8): ${fmt(peaks[domain])}`, '');
    // Final mean@8 is the primary figure; best (a maximum over evaluations) stands beside it.
    lines.push('| method | protocol | seeds | final mean@8 | best mean@8 | rollouts used | within budget | rollouts to weights-only peak | wall time per run (s), median (range) |', '|---|---|---|---|---|---|---|---|---|');
    for (const r of rows.filter((x) => x.domain === domain)) {
      const toPeak = r.toPeak ? `${r.toPeak.mean.toFixed(0)} ± ${r.toPeak.std.toFixed(0)} (${r.reachedPeak}/${r.seeds} seeds)` : `not reached (0/${r.seeds} seeds)`;
      const within = r.budgeted ? `${r.withinBudget}/${r.budgeted} runs` : '-';
      lines.push(`| ${r.method} | ${r.protocols.join(', ')} | ${r.seeds} | ${pm(r.final)} | ${pm(r.best)} | ${pm(r.rolloutsUsed, 0)} | ${within} | ${toPeak} | ${medRange(r.wallRange)} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

const yesNo = (x: boolean | null | undefined) => (x === null || x === undefined ? '-' : x ? 'yes' : '**no**');

/**
 * Each run's protocol and budget use, final mean@8 first with best beside it, and its grid points. A run from
 * before these fields shows protocol none and dashes.
 */
export function runsMarkdown(results: RunResult[], domains: string[]): string {
  const lines: string[] = [];
  for (const domain of domains) {
    const rs = results.filter((r) => r.domain === domain);
    if (rs.length === 0) continue;
    lines.push(`### ${domain}: runs`, '', '| method | seed | protocol | final mean@8 | best mean@8 | spent / max rollouts | unspent | within budget | grid points (exact rollouts) |', '|---|---|---|---|---|---|---|---|---|');
    for (const r of rs) {
      const b = r.budget ?? null;
      const grid = r.grid?.length ? r.grid.map((g) => (g.atRollouts === g.gridPoint ? `${g.gridPoint}` : `${g.gridPoint} (${g.atRollouts})`)).join(', ') : '-';
      lines.push(`| ${r.method} | ${r.seed} | ${runProtocol(r)} | ${fmt(r.finalMeanAt8)} | ${fmt(r.bestMeanAt8)} | ${b?.spentRollouts ?? r.rolloutsUsed} / ${b?.maxRollouts ?? '-'} | ${b?.unspentRollouts ?? '-'} | ${yesNo(b?.withinBudget)} | ${grid} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

/**
 * One plot per domain: test mean@8 against training + search rollouts, a line per (method, seed); grid
 * evaluations as filled diamonds at the exact rollout count they ran at, the grid points as faint rules.
 */
export function plotSpec(domain: string, results: RunResult[]): Record<string, unknown> {
  const rs = results.filter((r) => r.domain === domain);
  const values = rs.flatMap((r) => r.curve.map((p) => ({ method: r.method, seed: r.seed, rollouts: p.rollouts, meanAt8: p.meanAt8, label: p.label })));
  const grid = rs.flatMap((r) => (r.grid ?? []).map((g) => ({ method: r.method, seed: r.seed, gridPoint: g.gridPoint, rollouts: g.atRollouts, meanAt8: g.meanAt8 })));
  const x = { field: 'rollouts', type: 'quantitative', title: 'rollouts (training + search)' };
  const y = { field: 'meanAt8', type: 'quantitative', title: 'test mean@8' };
  // One distinct hue per method, in the report's order (the same method keeps its colour on every domain's plot);
  // the legend comes from the lines, not from the faint bands.
  const methods = [...new Set(results.map((r) => r.method))];
  const color = {
    field: 'method', type: 'nominal', scale: { scheme: methods.length <= 10 ? 'category10' : 'tableau20', domain: methods }, sort: methods,
    legend: { symbolType: 'stroke', symbolStrokeWidth: 3, symbolOpacity: 1, labelLimit: 320 },
  };
  // Seed bands: min to max over seeds per method, where the seeds share their x (the grid points; without a
  // grid, the rollout counts of the test curve, equal across seeds for the fixed schedules).
  // A run held to a rollout cap that ended less than one weight step short of it (the rest paid for no more
  // rounds or steps) adds its final score at the cap, where the seeds are compared; otherwise its band would
  // stop at its last grid point. A run that ended early (proposer exhausted) keeps its band where it ended.
  const atCap = rs.flatMap((r) => {
    const cap = r.budget?.maxRollouts;
    const unspent = r.budget?.unspentRollouts;
    if (!cap || unspent == null || r.finalMeanAt8 === null || r.grid?.some((g) => g.gridPoint === cap)) return [];
    const config = expandRunConfig(r.input);
    if (!config.ok) return [];
    const step = weightStepRollouts(config.config.weight.promptsPerStep, config.config.weight.samplesPerPrompt);
    return unspent < step ? [{ method: r.method, x: cap, meanAt8: r.finalMeanAt8 }] : [];
  });
  const bandValues = grid.length
    ? [...grid.map((g) => ({ method: g.method, x: g.gridPoint, meanAt8: g.meanAt8 })), ...atCap]
    : values.map((v) => ({ method: v.method, x: v.rollouts, meanAt8: v.meanAt8 }));
  const band = {
    data: { values: bandValues },
    mark: { type: 'area', opacity: 0.15 },
    encoding: { x: { field: 'x', type: 'quantitative' }, y: { aggregate: 'min', field: 'meanAt8', type: 'quantitative' }, y2: { aggregate: 'max', field: 'meanAt8' }, color },
  };
  const layer: Record<string, unknown>[] = [band, {
    data: { values },
    mark: { type: 'line', point: true, opacity: 0.8 },
    encoding: { x, y, color, detail: { field: 'seed', type: 'nominal' }, tooltip: [{ field: 'method' }, { field: 'seed' }, { field: 'label' }, { field: 'meanAt8' }] },
  }];
  if (grid.length) {
    layer.unshift({
      data: { values: [...new Set(grid.map((g) => g.gridPoint))].map((gridPoint) => ({ gridPoint })) },
      mark: { type: 'rule', strokeDash: [3, 3], opacity: 0.3, color: '#888' },
      encoding: { x: { field: 'gridPoint', type: 'quantitative' } },
    });
    layer.push({
      data: { values: grid },
      mark: { type: 'point', shape: 'diamond', filled: true, size: 80 },
      encoding: { x, y, color, tooltip: [{ field: 'method' }, { field: 'seed' }, { field: 'gridPoint', title: 'grid point' }, { field: 'rollouts', title: 'exact rollouts' }, { field: 'meanAt8' }] },
    });
  }
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json', width: 640, height: 300, background: 'white',
    title: {
      text: `${domain}: test mean@8 against rollouts (training + search)`,
      subtitle: grid.length
        ? ['one line per method and seed; diamonds: grid evaluations', 'bands: min to max over seeds at each grid point, and at the cap for runs that ended less than a weight step short of it']
        : 'one line per method and seed; bands: min to max over seeds',
    },
    layer,
  };
}

export interface Invocation {
  command: string; date: string; finishedAt: string | null; started: number; attached: number; skipped: number; failed: number;
  /** When this invocation last saw a run finish: how far a stopped invocation's time counts (absent before it was recorded). */
  lastRunAt?: string | null;
}

interface ResultsFile {
  description: string;
  budget: number;
  sizes: BenchSizes & { name: string };
  domains: string[];
  methods: string[];
  seeds: number[];
  /** The --proposer every run used (null: the built-in catalogue search); a later invocation joins this report only with the same. */
  proposer?: unknown;
  invocations: Invocation[];
  peaks: Record<string, number | null>;
  /** Every (domain, method) row, the sweep configurations included (they are flagged in `claims.sweep`). */
  table: TableRow[];
  /** The preregistered configuration, the claims checked against it, the levers, and the sweep. */
  claims: Claims;
  /** Each run with its protocol ('none' before the field), budget use and grid (null when not recorded). */
  runs: Array<RunResult & { protocol: string }>;
  missing: string[];
}

/**
 * The comparison's wall time: each invocation from its start to its end, or, for one stopped before its end
 * (killed, or cut off with its machine), to the last run it saw finish; summed, beside the runs' own wall
 * times summed. A stopped invocation that saw no run finish is not counted.
 */
export function comparisonWallTime(invocations: Invocation[], results: RunResult[]): string {
  const until = (i: Invocation) => i.finishedAt ?? i.lastRunAt ?? null;
  const counted = invocations.filter((i) => until(i) !== null);
  const hours = counted.reduce((a, i) => a + (Date.parse(until(i)!) - Date.parse(i.date)), 0) / 3_600_000;
  const runHours = results.reduce((a, r) => a + r.wallSeconds, 0) / 3600;
  const stopped = counted.filter((i) => i.finishedAt === null).length;
  const uncounted = invocations.length - counted.length;
  const n = (k: number, word: string) => `${k} ${word}${k === 1 ? '' : 's'}`;
  const how = [
    'each from its start to its end',
    ...(stopped ? [`${n(stopped, 'stopped invocation')} to the last run ${stopped === 1 ? 'it' : 'each'} saw finish`] : []),
  ].join('; ');
  return `Comparison wall time: ${hours.toFixed(2)} h over ${n(counted.length, 'invocation')} (${how}; summed${uncounted ? `; ${uncounted} stopped before a run finished not counted` : ''}); the finished runs' own wall times sum to ${runHours.toFixed(2)} h.`;
}

/**
 * The domains, methods and seeds of the comparison a results folder's report already covers, when its budget,
 * sizes and proposer are this invocation's (empty otherwise, or without a report).
 */
export function reportScope(out: string, opts: Pick<CompareOptions, 'budget' | 'sizes'>, proposer: unknown): { domains: string[]; methods: string[]; seeds: number[] } {
  const none = { domains: [], methods: [], seeds: [] };
  let prior: Partial<ResultsFile>;
  try {
    prior = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as Partial<ResultsFile>;
  } catch {
    return none;
  }
  const same = prior.budget === opts.budget && prior.sizes?.name === opts.sizes
    && JSON.stringify(prior.proposer ?? null) === JSON.stringify(proposer ?? null);
  if (!same || !Array.isArray(prior.domains) || !Array.isArray(prior.methods) || !Array.isArray(prior.seeds)) return none;
  return { domains: prior.domains, methods: prior.methods, seeds: prior.seeds };
}

export function previousInvocations(out: string): Invocation[] {
  try {
    return (JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as ResultsFile).invocations ?? [];
  } catch {
    return [];
  }
}

/** Writes results.json, results.md and one SVG per domain from the results at hand (finished runs only). */
export async function writeResults(out: string, opts: CompareOptions & { proposer?: unknown }, planned: PlannedRun[], results: RunResult[], invocations: Invocation[]): Promise<string[]> {
  const { rows, peaks } = aggregate(results, opts.methods, opts.domains);
  const preregistered = PREREGISTERED[opts.sizes] ?? null;
  const claims = computeClaims(results, opts.domains, preregistered);
  // The main table holds the preregistered WHALE only; other WHALE configurations are the sweep's (claims section).
  const mainRows = preregistered ? rows.filter((r) => !isSweep(r.method, preregistered.token)) : rows;
  const done = new Set(results.map((r) => r.workflowId));
  const missing = planned.filter((p) => !done.has(p.workflowId)).map((p) => p.workflowId);
  const file: ResultsFile = {
    description: 'whale bench compare: test mean@8 (D_test) of each method at an equal budget of training + search rollouts; test rollouts are not charged',
    budget: opts.budget, sizes: { name: opts.sizes, ...SIZES[opts.sizes] }, domains: opts.domains, methods: opts.methods, seeds: opts.seeds,
    proposer: opts.proposer ?? null,
    invocations, peaks, table: rows, claims, missing,
    runs: results.map((r) => ({ ...r, protocol: runProtocol(r), budget: r.budget ?? null, grid: r.grid ?? null })),
  };
  const written: string[] = [];
  await writeFileAtomic(path.join(out, 'results.json'), JSON.stringify(file, null, 2) + '\n');
  written.push('results.json');
  const last = invocations[invocations.length - 1];
  const md = [
    '# Method comparison (`whale bench compare`)', '',
    `Budget: ${opts.budget} training + search rollouts per run (test rollouts not charged); sizes \`${opts.sizes}\`; seeds ${opts.seeds.join(', ')}.`,
    `Each cell is mean ± std over the finished seeds. Final mean@8 is the primary figure; best mean@8, a maximum over the test evaluations, stands beside it and excludes the initial evaluation; "rollouts to weights-only peak" is the rollout count at the first test evaluation reaching the domain's weights-only peak.`,
    'Protocol: how each run was held to its budget (docs/method.md, "Comparison protocols"); runs from before the protocols show `none`, and a dash where they did not record their budget use. "Within budget" counts the runs with a rollout cap that stayed within it.',
    `Wall time is workflow start to close and includes any time a run waited for a worker; the table gives the median over seeds with the range, as a run that shared the machine with other work takes longer${opts.parallel > 1 ? `; runs shared the machine ${opts.parallel} at a time` : ''}.`,
    comparisonWallTime(invocations, results),
    missing.length ? `\n**${missing.length} of ${planned.length} planned runs are not finished yet**; rerun the same command to continue.` : `\nAll ${planned.length} planned runs finished.`,
    '',
    `Harness search: ${claims.harnessSearch}.`,
    '',
    markdownTable(mainRows, peaks),
    claimsMarkdown(claims),
    '## Runs', '',
    runsMarkdown(results, opts.domains),
    '## Invocations', '',
    ...invocations.map((i) => `- ${i.date}${i.finishedAt ? ` to ${i.finishedAt}` : ' (did not finish)'}: \`${i.command}\` (started ${i.started}, followed ${i.attached}, skipped ${i.skipped}, failed ${i.failed})`),
    '',
    last ? `Latest: \`${last.command}\` on ${last.date}.` : '',
    '',
  ].join('\n');
  await writeFileAtomic(path.join(out, 'results.md'), md);
  written.push('results.md');
  for (const domain of opts.domains) {
    if (!results.some((r) => r.domain === domain)) continue;
    const name = `test-mean-at-8-${domain}.svg`;
    await writeFileAtomic(path.join(out, name), await renderSvg(plotSpec(domain, results)));
    written.push(name);
  }
  return written;
}

