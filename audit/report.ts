// Writes the audit report folder: summary.md (config, phases with the rule that fired and its signals,
// accepted harnesses with diffs and scores, the rollout ledger, best and final mean@8), SVG plots drawn
// with Vega-Lite with the phases named on them, and index.html: the plots, the summary rendered as HTML
// (audit/markdown.ts: text from the run stays text) and a link to the run's Web UI page. Atomic writes.
import * as path from 'node:path';
import { writeFileAtomic } from '../store/artifact-store';
import type { PhaseExplanation } from './explain';
import { allTests, type Timeline } from './timeline';
import { parseDomainRef } from '../domains/external';
import { pointerLines } from './pointers';
import { escapeHtml, markdownToSafeHtml } from './markdown';
import { protocolLines } from './protocol-report';

type VegaLiteSpec = Record<string, unknown>;

/** Renders a Vega-Lite spec to SVG headless (vega's SVG renderer needs no browser or canvas). */
export async function renderSvg(spec: VegaLiteSpec): Promise<string> {
  const vega = await import('vega');
  const { compile } = await import('vega-lite');
  const compiled = compile(spec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  return view.toSVG();
}

/** A phase's span on the rollout axis, named as the run's WhalePhase search attribute names it (weight-1, harness-1, ...). */
interface Band { kind: string; from: number; to: number; mid: number }

function phaseBands(t: Timeline, phases: PhaseExplanation[]): Band[] {
  const rolloutsAt = (step: number) => (step <= 0 ? 0 : t.steps.find((s) => s.step === step)?.atRollouts ?? 0);
  const bands: Band[] = [];
  for (const p of phases) {
    const [from, to] = p.kind === 'weight'
      ? [rolloutsAt(p.startStep), rolloutsAt(p.endStep)]
      : [rolloutsAt(p.endStep), t.harnessPhases[p.index - 1]?.atRollouts ?? rolloutsAt(p.endStep)];
    bands.push({ kind: `${p.kind}-${p.index}`, from, to, mid: (from + to) / 2 });
  }
  return bands;
}

export function plotSpecs(t: Timeline, phases: PhaseExplanation[]): Record<string, VegaLiteSpec> {
  const bands = phaseBands(t, phases);
  // Each phase is a shaded band with its name written at the top of the band (and in the legend).
  const bandLayer = {
    data: { values: bands },
    layer: [
      { mark: { type: 'rect', opacity: 0.12 }, encoding: { x: { field: 'from', type: 'quantitative', title: 'rollouts (training + search)' }, x2: { field: 'to' }, color: { field: 'kind', type: 'nominal', title: 'phase', sort: null } } },
      { mark: { type: 'text', baseline: 'top', dy: 3, fontSize: 10, color: '#444' }, encoding: { x: { field: 'mid', type: 'quantitative' }, y: { value: 0 }, text: { field: 'kind' } } },
    ],
  };
  const base = { $schema: 'https://vega.github.io/schema/vega-lite/v6.json', width: 640, height: 260, background: 'white' };
  return {
    'test-mean-at-8': {
      ...base, title: 'Test mean@8 against rollouts (training + search), with phase bands',
      layer: [bandLayer, {
        data: { values: t.tests.map((x) => ({ rollouts: x.atRollouts, meanAt8: x.meanAt8, label: x.label })) },
        mark: { type: 'line', point: true, color: '#1f4e79' },
        encoding: { x: { field: 'rollouts', type: 'quantitative', title: 'rollouts (training + search)' }, y: { field: 'meanAt8', type: 'quantitative', title: 'mean@8', scale: { domain: [0, 1] } }, tooltip: [{ field: 'label' }] },
      }],
    },
    'training-reward': {
      ...base, title: 'Training reward (the weight-patience signal) against rollouts',
      layer: [bandLayer, {
        data: { values: t.steps.filter((s) => s.meanReward !== null).map((s) => ({ rollouts: s.atRollouts, reward: s.meanReward, step: s.step })) },
        mark: { type: 'line', point: true, color: '#7a3b00' },
        encoding: { x: { field: 'rollouts', type: 'quantitative', title: 'rollouts (training + search)' }, y: { field: 'reward', type: 'quantitative', title: 'mean reward', scale: { domain: [0, 1] } } },
      }],
    },
    'harness-candidates': {
      ...base, title: 'Harness candidates: D_harness success per proposal round',
      data: { values: t.harnessPhases.flatMap((p, i) => p.rows.filter((r) => r.status === 'evaluated').map((r) => ({ phase: `harness-${i + 1}`, round: r.round, success: r.successRate, name: r.name, accepted: r.name === p.accepted }))) },
      mark: { type: 'point', filled: true, size: 70 },
      encoding: {
        x: { field: 'round', type: 'ordinal', title: 'round (0 = incoming)' }, y: { field: 'success', type: 'quantitative', title: 'success rate', scale: { domain: [0, 1] } },
        color: { field: 'phase', type: 'nominal' }, shape: { field: 'accepted', type: 'nominal' }, tooltip: [{ field: 'name' }],
      },
    },
  };
}

function fmt(x: number | null | undefined): string {
  return x === null || x === undefined ? '-' : Number.isInteger(x) ? String(x) : x.toFixed(4);
}

/** The run's domain identity and where its start weights and harness came from (its lineage). */
export function originLines(t: Timeline): string[] {
  const c = t.config;
  if (!c) return [];
  const ref = parseDomainRef(c.domain);
  const domain = ref ? `Domain: folder \`${ref.dir}\` (content sha256 \`${ref.sha256 ?? 'not pinned'}\`)` : `Domain: \`${c.domain}\``;
  const l = c.lineage;
  const pair = `checkpoint \`${c.model.baseCheckpoint?.sha256.slice(0, 12) ?? '-'}\`, harness \`${c.model.baseHarness?.sha256.slice(0, 12) ?? '-'}\``;
  const lineage = l
    ? `Lineage: branched from ${l.kind === 'bundle' ? `agent bundle \`${l.bundlePath}\` (manifest sha256 \`${l.bundleManifestSha256?.slice(0, 12) ?? '-'}\`), exported from ` : ''}run \`${l.parentRunId}\`: its ${l.which} ${pair} (D_test mean@8 there ${fmt(l.parentMeanAt8)}; parent domain \`${l.parentDomain}\`)`
    : c.model.baseCheckpoint || c.model.baseHarness
      ? `Lineage: start ${pair} set in the run config (no parent recorded)`
      : "Lineage: a fresh start (the domain's base policy and seed harness)";
  return [domain, '', lineage, ''];
}

/** A table cell of text from the run (model-written hypotheses, reasons): one line, no column breaks. */
function cell(s: string, max: number): string {
  return s.replace(/\s+/g, ' ').replace(/\|/g, '/').slice(0, max);
}

export function summaryMarkdown(t: Timeline, phases: PhaseExplanation[], models: Record<string, string> = {}, webUiUrl: string | null = null): string {
  const s = t.summary;
  const trainingRollouts = t.steps.reduce((a, x) => a + x.rollouts, 0);
  const best = t.tests.filter((x) => x.label !== 'initial').reduce<number | null>((m, x) => (m === null || x.meanAt8 > m ? x.meanAt8 : m), null);
  const lines = [
    `# Audit of run \`${t.workflowId}\``, '',
    `Status: **${t.status}**${t.failure ? ` (${t.failure})` : ''}; ${t.runs} workflow run(s) in the continue-as-new chain.`, '',
    ...(webUiUrl ? [`In the Temporal Web UI: <${webUiUrl}>`, ''] : []),
    ...originLines(t),
    '## Result', '',
    '| initial mean@8 | best mean@8 | final mean@8 | weight steps | training rollouts | search rollouts |', '|---|---|---|---|---|---|',
    `| ${fmt(t.tests.find((x) => x.label === 'initial')?.meanAt8)} | ${fmt(s?.bestMeanAt8 ?? best)} | ${fmt(s?.finalMeanAt8 ?? null)} | ${t.steps.length} | ${trainingRollouts} | ${t.searchRollouts} |`, '',
    ...protocolLines(t),
    '## Phases', '',
    'Each switch is recomputed from the recorded signals with the workflow\'s own pure rules and compared with the rule the workflow recorded.', '',
  ];
  for (const p of phases) {
    const verdict = p.matches === null ? 'no record to compare' : p.matches ? 'matches the recorded decision' : '**DOES NOT MATCH the recorded decision**';
    lines.push(`### ${p.kind}-${p.index}: ${p.kind} phase ${p.index}, steps ${p.startStep}-${p.endStep}${p.kind === 'harness' ? `, ${p.proposalRounds} proposal rounds` : ''}`, '');
    lines.push(`- rule that fired (recomputed): ${p.rule}`);
    if (p.recordedRule) lines.push(`- rule recorded by the workflow: ${p.recordedRule}`);
    lines.push(`- ${verdict}`);
    if (p.accepted) lines.push(`- accepted harness: \`${p.accepted}\`; frontier: ${p.frontier?.map((f) => `\`${f}\``).join(', ') || '-'}`);
    lines.push('', '<details><summary>signals</summary>', '', ...p.trace.map((x) => `- ${x}`), '', '</details>', '');
  }
  lines.push('## Harness candidates', '');
  t.harnessPhases.forEach((p, i) => {
    lines.push(`### harness-${i + 1} (archive \`${p.archiveKey}\`)`, '', '| round | candidate | parent | status | success | mean turns | axis | hypothesis |', '|---|---|---|---|---|---|---|---|');
    for (const r of p.rows) lines.push(`| ${r.round} | ${cell(r.name, 80)}${r.name === p.accepted ? ' (accepted)' : ''} | ${cell(r.parent, 80)} | ${r.status}${r.reason ? `: ${cell(r.reason, 80)}` : ''} | ${fmt(r.successRate)} | ${fmt(r.meanTurns)} | ${cell(r.axis, 40)} | ${cell(r.hypothesis, 100)} |`);
    lines.push('');
  });
  if (t.steps.length) {
    // Kept and dropped model calls of the accepted trajectories: what RSFT trained on (absent in older runs).
    lines.push('## Weight steps', '', '| step | mean reward | accepted | kept calls | dropped calls | optimizer updates | trained tokens | loss |', '|---|---|---|---|---|---|---|---|');
    for (const x of t.steps) {
      const f = x.fineTune;
      lines.push(`| ${x.step} | ${fmt(x.meanReward)} | ${x.accepted}/${x.rollouts} | ${f?.keptCalls ?? '-'} | ${f?.droppedCalls ?? '-'} | ${f?.minibatches ?? '-'} | ${f?.acceptedTokens ?? '-'} | ${fmt(f?.meanLoss ?? null)} |`);
    }
    lines.push('');
  }
  lines.push(...pointerLines(t, models));
  // Every evaluation the workflow recorded: one of an unchanged (checkpoint, harness) pair reused the score
  // before it and ran no activity, so it is marked.
  const tests = allTests(t);
  lines.push('## Test evaluations', '', '| label | after weight step | rollouts | mean@8 |', '|---|---|---|---|',
    ...tests.map((x) => `| ${x.label} | ${x.atWeightStep} | ${x.atRollouts} | ${fmt(x.meanAt8)}${x.reused ? ' (reused: checkpoint and harness unchanged)' : ''} |`), '');
  if (t.messages.length) lines.push('## Messages', '', ...t.messages.map((m) => `- ${m.kind} \`${m.name}\` after weight step ${m.atWeightStep}: ${JSON.stringify(m.args)}`), '');
  lines.push('## Configuration (expanded)', '', '```json', JSON.stringify(t.config, null, 2), '```', '');
  return lines.join('\n');
}

export interface ReportOptions {
  /** The run's page in the Temporal Web UI (audit/web-ui.ts), linked from the page and the summary; null: none known. */
  webUiUrl?: string | null;
}

/** `models`: the model each checkpoint pointer names (audit/pointers.ts), for a run on a served model. */
export async function writeReport(t: Timeline, phases: PhaseExplanation[], outDir: string, models: Record<string, string> = {}, opts: ReportOptions = {}): Promise<string[]> {
  const written: string[] = [];
  const specs = plotSpecs(t, phases);
  const svgs: Record<string, string> = {};
  for (const [name, spec] of Object.entries(specs)) {
    svgs[name] = await renderSvg(spec);
    await writeFileAtomic(path.join(outDir, `${name}.svg`), svgs[name]);
    written.push(`${name}.svg`);
  }
  const webUi = opts.webUiUrl ?? null;
  const md = summaryMarkdown(t, phases, models, webUi);
  await writeFileAtomic(path.join(outDir, 'summary.md'), md);
  written.push('summary.md');
  // The page runs no script at all; the policy makes that explicit, so even markup that slipped through stays inert.
  const html = `<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>Audit ${escapeHtml(t.workflowId)}</title>
<style>body{font-family:sans-serif;max-width:980px;margin:2em auto;padding:0 1em}figure{margin:1.5em 0}pre{white-space:pre-wrap;background:#f6f6f6;padding:1em}
table{border-collapse:collapse;margin:1em 0;font-size:90%}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}th{background:#f0f0f0}
code{background:#f6f6f6;padding:0 .2em}details{margin:.5em 0 1em}</style></head>
<body><h1>Audit of run ${escapeHtml(t.workflowId)}</h1>
${webUi ? `<p id="web-ui">In the Temporal Web UI: <a href="${escapeHtml(webUi)}">${escapeHtml(webUi)}</a></p>` : ''}
${Object.entries(svgs).map(([name, svg]) => `<figure id="${name}">${svg}</figure>`).join('\n')}
<h2>Summary</h2><article id="summary">
${markdownToSafeHtml(md.replace(/^# .*\n/, ''))}</article></body></html>`;
  await writeFileAtomic(path.join(outDir, 'index.html'), html);
  written.push('index.html');
  return written;
}
