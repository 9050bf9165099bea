// The audit summary's comparison-protocol section: the run's protocol and budget use (spent, unspent, within
// budget) and its evaluation-grid records (grid point beside the exact rollout count it ran at).
import type { RunSummary } from '../workflows/run-state';
import type { Timeline } from './timeline';

type Budget = NonNullable<RunSummary['budget']>;
type GridRow = NonNullable<RunSummary['gridEvaluations']>[number];

/**
 * The run's budget use: the completed run's summary when it has one, else worked out from the config and the
 * rollouts recorded so far (`soFar`: a run still going, or one from before the summary field).
 */
export function budgetUse(t: Timeline): (Budget & { soFar: boolean }) | null {
  if (t.summary?.budget) return { ...t.summary.budget, soFar: false };
  const b = t.config?.budget;
  if (!b) return null;
  const spent = t.steps.reduce((a, s) => a + s.rollouts, 0) + t.searchRollouts;
  return {
    protocol: b.protocol, maxRollouts: b.maxRollouts, totalWeightSteps: b.totalWeightSteps, spentRollouts: spent,
    unspentRollouts: b.maxRollouts === null ? null : Math.max(0, b.maxRollouts - spent),
    withinBudget: b.maxRollouts === null ? null : spent <= b.maxRollouts, soFar: true,
  };
}

/**
 * The grid's records: the summary's (a grid point whose pair was already evaluated is recorded there without a
 * new evaluation), else the evaluations the history labels grid-N. Empty without a grid.
 */
export function gridRows(t: Timeline): GridRow[] {
  if (t.summary?.gridEvaluations) return t.summary.gridEvaluations;
  if (t.config?.test.everyRollouts == null) return [];
  return t.tests.flatMap((x) => {
    const m = /^grid-(\d+)$/.exec(x.label);
    return m ? [{ gridPoint: Number(m[1]), atRollouts: x.atRollouts, atWeightStep: x.atWeightStep, meanAt8: x.meanAt8 }] : [];
  });
}

const yesNo = (x: boolean | null) => (x === null ? '-' : x ? 'yes' : '**no**');
const num = (x: number | null) => (x === null ? '-' : String(x));

/** Markdown lines: the budget table, then the grid table when the run has a grid. */
export function protocolLines(t: Timeline): string[] {
  const b = budgetUse(t);
  if (!b) return [];
  const lines = [
    '## Budget', '',
    `Protocol \`${b.protocol}\` (docs/method.md, "Comparison protocols")${b.soFar ? '; spent so far, from the recorded rollouts (no run summary yet)' : ''}.`, '',
    '| protocol | max rollouts | weight steps budgeted | spent (training + search) | unspent | within budget |', '|---|---|---|---|---|---|',
    `| ${b.protocol} | ${num(b.maxRollouts)} | ${b.totalWeightSteps} | ${b.spentRollouts} | ${num(b.unspentRollouts)} | ${yesNo(b.withinBudget)} |`, '',
  ];
  const grid = gridRows(t);
  if (grid.length) {
    lines.push(
      `### Evaluation grid (every ${t.config?.test.everyRollouts ?? '?'} rollouts)`, '',
      'Each grid point is evaluated after the weight step or round that reaches it, one inside a WHALE harness phase at the phase end (with the harness it started with); "later" marks an exact count past the grid point.', '',
      '| grid point | evaluated at rollouts | after weight step | mean@8 |', '|---|---|---|---|',
      ...grid.map((g) => `| ${g.gridPoint} | ${g.atRollouts}${g.atRollouts !== g.gridPoint ? ' (later)' : ''} | ${g.atWeightStep} | ${g.meanAt8} |`), '',
    );
  }
  return lines;
}
