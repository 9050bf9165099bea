// `whale bench compare`: the paper's method comparison on the project's domains. Every (domain, method, seed)
// is a real whaleRun workflow at an equal rollout budget (training + search rollouts; test rollouts are
// not charged), with a deterministic workflow id from (domain, method, seed, budget, config hash), so the
// command is resumable and incremental: a finished run is read back (from the results folder, else from the
// server) and skipped, a running one is followed, a failed one is started again. The results folder holds
// results.json, results.md (best / final mean@8 as mean ± std over seeds, rollouts used, rollouts to reach
// the weights-only peak, wall time), one Vega-Lite SVG per domain (test mean@8 against rollouts), and the
// exact command line and date of every invocation.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { TemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { serverAnswers, startDevServer, stopChild } from '../cli/dev-server';
import { PROJECT_ROOT } from '../cli/paths';
import { sha256Hex, writeFileAtomic } from '../store/artifact-store';
import { buildTimeline } from '../audit/timeline';
import { renderSvg } from '../audit/report';
import { expandRunConfig } from '../workflows/run-config';
import type { RunSummary } from '../workflows/run-state';

type History = temporal.api.history.v1.IHistory;

export const DOMAINS = ['math', 'search-qa', 'chess'] as const;

/** Method tokens: the plain methods, and `whale-fixed:E:I` for WHALE fixed at (E epochs, I rounds). */
export const DEFAULT_METHODS = ['weights-only', 'harness-only', 'stagewise', 'prompt-only', 'whale-fixed:0.1:3', 'whale-fixed:0.2:5', 'whale-adaptive'] as const;
const PLAIN_METHODS = ['weights-only', 'harness-only', 'stagewise', 'prompt-only', 'whale-adaptive'] as const;

/** Run sizes: `default` for the committed comparison, `tiny` to prove the machinery in seconds. */
export interface BenchSizes {
  promptsPerStep: number;
  samplesPerPrompt: number;
  minibatchSize: number;
  /** D_harness tasks a candidate is scored on, and candidates per proposal round (M). */
  harnessTasks: number;
  candidatesPerRound: number;
  testTasks: number;
  testSamplesPerTask: number;
  testEveryEpochs: number;
  /** E, I of prompt-only search (the same schedule as the first WHALE fixed setting). */
  promptOnlyEpochs: number;
  promptOnlyRounds: number;
  /** Patience of WHALE adaptive, scaled to the budget (the paper's 0.2 epochs would never fire at this size). */
  patienceEpochs: number;
  harnessMinProposalRounds: number;
  harnessPatienceRounds: number;
  harnessMaxProposalRounds: number;
}

export const SIZES: Record<'default' | 'tiny', BenchSizes> = {
  default: {
    promptsPerStep: 64, samplesPerPrompt: 8, minibatchSize: 64, harnessTasks: 128, candidatesPerRound: 3,
    testTasks: 128, testSamplesPerTask: 8, testEveryEpochs: 0.1, promptOnlyEpochs: 0.1, promptOnlyRounds: 3,
    patienceEpochs: 0.05, harnessMinProposalRounds: 2, harnessPatienceRounds: 1, harnessMaxProposalRounds: 4,
  },
  tiny: {
    promptsPerStep: 4, samplesPerPrompt: 2, minibatchSize: 8, harnessTasks: 4, candidatesPerRound: 1,
    testTasks: 4, testSamplesPerTask: 2, testEveryEpochs: 0.001, promptOnlyEpochs: 0.001, promptOnlyRounds: 2,
    patienceEpochs: 0.001, harnessMinProposalRounds: 1, harnessPatienceRounds: 1, harnessMaxProposalRounds: 2,
  },
};
export const DEFAULT_BUDGET = 6144;

export interface CompareOptions {
  domains: string[];
  seeds: number[];
  methods: string[];
  /** Training + search rollouts per run. */
  budget: number;
  sizes: keyof typeof SIZES;
  out: string;
  parallel: number;
  /** auto: start workers for the queues nobody polls; start: always; none: never. */
  workers: 'auto' | 'start' | 'none';
  /** Only print the plan (runs, ids, which are finished) and estimated rollouts. */
  plan: boolean;
}

export interface PlannedRun {
  domain: string;
  method: string;
  seed: number;
  workflowId: string;
  input: Record<string, unknown>;
}

export interface CurvePoint { rollouts: number; meanAt8: number; label: string }

export interface RunResult {
  domain: string;
  method: string;
  seed: number;
  workflowId: string;
  status: 'completed';
  initialMeanAt8: number | null;
  bestMeanAt8: number | null;
  finalMeanAt8: number | null;
  /** Training + search rollouts (the budgeted quantity). */
  rolloutsUsed: number;
  testRollouts: number;
  weightSteps: number;
  proposalRounds: number;
  /** Workflow start to close over the continue-as-new chain (includes any time the run waited for workers). */
  wallSeconds: number;
  /** Seconds inside activity executions (started to closed), summed; parallel activities counted once each. */
  activitySeconds: number;
  curve: CurvePoint[];
  input: Record<string, unknown>;
}

/** Parses a method token; throws a message naming the accepted forms. */
export function parseMethod(token: string): { method: string; epochs?: number; rounds?: number } {
  if ((PLAIN_METHODS as readonly string[]).includes(token)) return { method: token };
  const m = /^whale-fixed:(\d+(?:\.\d+)?):(\d+)$/.exec(token);
  if (m && Number(m[1]) > 0 && Number(m[2]) >= 1) return { method: 'whale-fixed', epochs: Number(m[1]), rounds: Number(m[2]) };
  throw new Error(`unknown method '${token}': use ${PLAIN_METHODS.join(', ')}, or whale-fixed:E:I (E epochs per weight phase > 0, I rounds per harness phase >= 1, e.g. whale-fixed:0.1:3)`);
}

/**
 * The run config of one (domain, method, seed) at a budget of `budget` training + search rollouts.
 * Weight steps cost promptsPerStep x samplesPerPrompt rollouts, a harness round M x harnessTasks (round 0,
 * the re-scoring of the incoming harness, harnessTasks). Alternating methods stop at `maxRollouts` (after the
 * weight phase that reaches it); harness-only and stagewise get the number of steps / rounds that fits.
 */
export function benchRunConfig(token: string, domain: string, seed: number, budget: number, s: BenchSizes): Record<string, unknown> {
  const { method, epochs, rounds } = parseMethod(token);
  const stepCost = s.promptsPerStep * s.samplesPerPrompt;
  const roundCost = s.harnessTasks * s.candidatesPerRound;
  const roundsFor = (rollouts: number) => Math.max(1, Math.floor((rollouts - s.harnessTasks) / roundCost));
  const base = {
    version: 1,
    name: `bench compare: ${token} on ${domain}, seed ${seed}, budget ${budget} rollouts`,
    domain, seed,
    weight: { promptsPerStep: s.promptsPerStep, samplesPerPrompt: s.samplesPerPrompt, minibatchSize: s.minibatchSize, learningRate: 1e-4 },
    harness: { candidatesPerRound: s.candidatesPerRound, taskLimit: s.harnessTasks },
    test: { everyEpochs: s.testEveryEpochs, samplesPerTask: s.testSamplesPerTask, taskLimit: s.testTasks },
  };
  const allSteps = Math.max(1, Math.ceil(budget / stepCost));
  switch (method) {
    case 'weights-only':
      return { ...base, method, budget: { totalWeightSteps: allSteps, maxRollouts: budget } };
    case 'harness-only':
      return { ...base, method, budget: { totalWeightSteps: 0, harnessOnlyProposalRounds: roundsFor(budget) } };
    case 'stagewise': {
      const steps = Math.max(1, Math.round(budget / 2 / stepCost));
      return { ...base, method, stagewiseOrder: 'weights-first', budget: { totalWeightSteps: steps, harnessOnlyProposalRounds: roundsFor(budget - steps * stepCost) } };
    }
    case 'prompt-only':
      return { ...base, method, switching: { kind: 'fixed', weightEpochs: s.promptOnlyEpochs, harnessRounds: s.promptOnlyRounds }, budget: { totalWeightSteps: allSteps, maxRollouts: budget } };
    case 'whale-fixed':
      return { ...base, method, switching: { kind: 'fixed', weightEpochs: epochs, harnessRounds: rounds }, budget: { totalWeightSteps: allSteps, maxRollouts: budget } };
    case 'whale-adaptive':
      return {
        ...base, method,
        switching: {
          kind: 'patience', windowEpochs: s.patienceEpochs, burnInEpochs: s.patienceEpochs, patienceEpochs: s.patienceEpochs,
          harnessMinProposalRounds: s.harnessMinProposalRounds, harnessPatienceRounds: s.harnessPatienceRounds, harnessMaxProposalRounds: s.harnessMaxProposalRounds,
        },
        budget: { totalWeightSteps: allSteps, maxRollouts: budget },
      };
    default:
      throw new Error(`unreachable method ${method}`);
  }
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v);
}

/** Deterministic workflow id: the same (domain, method, seed, budget, config) always names the same run. */
export function benchWorkflowId(token: string, domain: string, seed: number, budget: number, input: Record<string, unknown>): string {
  const { execution: _queues, ...hashed } = input;
  void _queues;
  const hash = sha256Hex(canonicalJson(hashed)).slice(0, 10);
  return `bench-${domain}-${token.replace(/:/g, '-')}-s${seed}-b${budget}-${hash}`;
}

/** Every run of the comparison, seed-major (a sitting that stops early leaves complete seeds behind). */
export function planRuns(opts: Pick<CompareOptions, 'domains' | 'seeds' | 'methods' | 'budget' | 'sizes'>, config: TemporalConfig): PlannedRun[] {
  const sizes = SIZES[opts.sizes];
  if (!sizes) throw new Error(`unknown --sizes '${opts.sizes}': use ${Object.keys(SIZES).join(' or ')}`);
  const runs: PlannedRun[] = [];
  for (const seed of opts.seeds) {
    for (const domain of opts.domains) {
      for (const token of opts.methods) {
        const input = benchRunConfig(token, domain, seed, opts.budget, sizes);
        const expanded = expandRunConfig(input);
        if (!expanded.ok) throw new Error(`the bench built an invalid run config for ${token} on ${domain}: ${expanded.problems.join('; ')}`);
        const workflowId = benchWorkflowId(token, domain, seed, opts.budget, input);
        if (config.taskQueues.model !== 'whale-model' || config.taskQueues.proposer !== 'whale-proposer') {
          input.execution = { modelTaskQueue: config.taskQueues.model, proposerTaskQueue: config.taskQueues.proposer };
        }
        runs.push({ domain, method: token, seed, workflowId, input });
      }
    }
  }
  return runs;
}

const ts = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : NaN;

/** The histories of the latest continue-as-new chain of a workflow id, oldest first (earlier failed chains are left out). */
export async function fetchLatestChain(client: Client, workflowId: string, latestRunId?: string): Promise<History[]> {
  const chain: History[] = [];
  let runId: string | undefined = latestRunId;
  for (let guard = 0; guard < 10_000; guard++) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    chain.unshift(history);
    const previous = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!previous) return chain;
    runId = previous;
  }
  throw new Error(`continue-as-new chain of ${workflowId} does not end`);
}

/** Wall time (first start to last close) and time inside activity executions, from the chain's histories. */
export function historyTimes(histories: History[]): { wallSeconds: number; activitySeconds: number } {
  let first = NaN;
  let last = NaN;
  let activityMs = 0;
  for (const h of histories) {
    const started = new Map<string, number>();
    for (const e of h.events ?? []) {
      const t = ts(e.eventTime as never);
      if (Number.isNaN(first)) first = t;
      last = t;
      if (e.activityTaskStartedEventAttributes) started.set(String(e.activityTaskStartedEventAttributes.scheduledEventId), t);
      const closed = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCanceledEventAttributes;
      if (closed) {
        const s = started.get(String(closed.scheduledEventId));
        if (s !== undefined) activityMs += t - s;
      }
    }
  }
  return { wallSeconds: (last - first) / 1000, activitySeconds: activityMs / 1000 };
}

/** A finished run's result from its histories (null while it has not completed). */
export function resultFromHistories(run: PlannedRun, histories: History[]): RunResult | null {
  const t = buildTimeline(run.workflowId, histories);
  if (t.status !== 'completed' || !t.summary) return null;
  const s: RunSummary = t.summary;
  const times = historyTimes(histories);
  const rolloutsUsed = s.ledger.training + s.ledger.search;
  const curve: CurvePoint[] = t.tests.map((x) => ({ rollouts: x.atRollouts, meanAt8: x.meanAt8, label: x.label }));
  // The workflow does not re-evaluate an unchanged (checkpoint, harness) pair: its final score then is the last
  // evaluation's, recorded at the final rollout count. The curve shows it there too.
  const last = curve[curve.length - 1];
  if (s.finalMeanAt8 !== null && (!last || last.rollouts < rolloutsUsed)) curve.push({ rollouts: rolloutsUsed, meanAt8: s.finalMeanAt8, label: 'final' });
  return {
    domain: run.domain, method: run.method, seed: run.seed, workflowId: run.workflowId, status: 'completed',
    initialMeanAt8: s.initialMeanAt8, bestMeanAt8: s.bestMeanAt8, finalMeanAt8: s.finalMeanAt8,
    rolloutsUsed, testRollouts: s.ledger.test,
    weightSteps: s.weightStepsDone, proposalRounds: s.proposalRoundsDone, ...times,
    curve,
    input: run.input,
  };
}

const runFile = (out: string, workflowId: string) => path.join(out, 'runs', `${workflowId}.json`);

function readLocalResult(out: string, run: PlannedRun): RunResult | null {
  const file = runFile(out, run.workflowId);
  if (!existsSync(file)) return null;
  try {
    const r = JSON.parse(readFileSync(file, 'utf8')) as RunResult;
    return r.status === 'completed' && r.workflowId === run.workflowId ? r : null;
  } catch {
    return null; // A damaged cache file is ignored: the run is read again from the server (or re-run).
  }
}

type Logger = (line: string) => void;

/** Where a planned run stands on the server: finished (its result read back and cached), running, or to start. */
async function serverState(client: Client, out: string, run: PlannedRun): Promise<{ result: RunResult } | { status: string | null }> {
  let status: string | null = null;
  let runId: string | undefined;
  try {
    const d = await client.workflow.getHandle(run.workflowId).describe();
    status = d.status.name;
    runId = d.runId;
  } catch (err) {
    if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
  }
  if (status === 'COMPLETED') {
    const r = resultFromHistories(run, await fetchLatestChain(client, run.workflowId, runId));
    if (r) {
      await writeFileAtomic(runFile(out, run.workflowId), JSON.stringify(r, null, 2) + '\n');
      return { result: r };
    }
  }
  return { status };
}

/** Follows a running run, or starts it (again), to completion; caches its result in the results folder. */
async function executeRun(client: Client, config: TemporalConfig, out: string, run: PlannedRun, status: string | null, log: Logger, counts: Counts): Promise<RunResult> {
  if (status === 'RUNNING') {
    counts.attached += 1;
    log(`follow ${run.workflowId}: already running (a previous invocation started it)`);
  } else {
    counts.started += 1;
    log(status ? `start ${run.workflowId}: the previous run ended ${status}; starting it again` : `start ${run.workflowId}`);
    await client.workflow.start('whaleRun', { taskQueue: config.taskQueues.orchestration, workflowId: run.workflowId, args: [run.input] });
  }
  const handle = client.workflow.getHandle(run.workflowId);
  const summary = (await handle.result()) as RunSummary;
  const d = await handle.describe();
  const r = resultFromHistories(run, await fetchLatestChain(client, run.workflowId, d.runId));
  if (!r) throw new Error(`run ${run.workflowId} returned but its history does not show a completed run`);
  log(`done  ${run.workflowId}: best ${fmt(summary.bestMeanAt8)} final ${fmt(summary.finalMeanAt8)} rollouts ${r.rolloutsUsed} wall ${r.wallSeconds.toFixed(0)} s`);
  await writeFileAtomic(runFile(out, run.workflowId), JSON.stringify(r, null, 2) + '\n');
  return r;
}

interface Counts { skipped: number; started: number; attached: number; failed: number }

const fmt = (x: number | null | undefined, d = 4) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));

export function meanStd(xs: number[]): { mean: number; std: number; n: number } | null {
  if (xs.length === 0) return null;
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const std = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1)) : 0;
  return { mean, std, n: xs.length };
}

export interface TableRow {
  domain: string;
  method: string;
  seeds: number;
  best: ReturnType<typeof meanStd>;
  final: ReturnType<typeof meanStd>;
  rolloutsUsed: ReturnType<typeof meanStd>;
  /** Rollouts until the first test evaluation at or above the domain's weights-only peak (seeds that reached it). */
  toPeak: ReturnType<typeof meanStd>;
  reachedPeak: number;
  wallSeconds: ReturnType<typeof meanStd>;
}

/** Aggregates results per (domain, method). The weights-only peak is the mean over seeds of its best mean@8. */
export function aggregate(results: RunResult[], methods: string[], domains: string[]): { rows: TableRow[]; peaks: Record<string, number | null> } {
  const rows: TableRow[] = [];
  const peaks: Record<string, number | null> = {};
  for (const domain of domains) {
    const wo = results.filter((r) => r.domain === domain && r.method === 'weights-only' && r.bestMeanAt8 !== null);
    const peak = meanStd(wo.map((r) => r.bestMeanAt8!))?.mean ?? null;
    peaks[domain] = peak;
    for (const method of methods) {
      const rs = results.filter((r) => r.domain === domain && r.method === method);
      if (rs.length === 0) continue;
      const reach = peak === null ? [] : rs.map((r) => r.curve.find((p) => p.meanAt8 >= peak - 1e-12)?.rollouts).filter((x): x is number => x !== undefined);
      rows.push({
        domain, method, seeds: rs.length,
        best: meanStd(rs.map((r) => r.bestMeanAt8).filter((x): x is number => x !== null)),
        final: meanStd(rs.map((r) => r.finalMeanAt8).filter((x): x is number => x !== null)),
        rolloutsUsed: meanStd(rs.map((r) => r.rolloutsUsed)),
        toPeak: meanStd(reach), reachedPeak: reach.length,
        wallSeconds: meanStd(rs.map((r) => r.wallSeconds)),
      });
    }
  }
  return { rows, peaks };
}

const pm = (s: ReturnType<typeof meanStd>, d = 4) => (s ? `${s.mean.toFixed(d)} ± ${s.std.toFixed(d)}` : '-');

export function markdownTable(rows: TableRow[], peaks: Record<string, number | null>): string {
  const lines: string[] = [];
  for (const domain of [...new Set(rows.map((r) => r.domain))]) {
    lines.push(`### ${domain}`, '', `weights-only peak (mean over seeds of its best test mean@8): ${fmt(peaks[domain])}`, '');
    lines.push('| method | seeds | best mean@8 | final mean@8 | rollouts used | rollouts to weights-only peak | wall time (s) |', '|---|---|---|---|---|---|---|');
    for (const r of rows.filter((x) => x.domain === domain)) {
      const toPeak = r.toPeak ? `${r.toPeak.mean.toFixed(0)} ± ${r.toPeak.std.toFixed(0)} (${r.reachedPeak}/${r.seeds} seeds)` : `not reached (0/${r.seeds} seeds)`;
      lines.push(`| ${r.method} | ${r.seeds} | ${pm(r.best)} | ${pm(r.final)} | ${pm(r.rolloutsUsed, 0)} | ${toPeak} | ${pm(r.wallSeconds, 0)} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

/** One plot per domain: test mean@8 against training + search rollouts, a line per (method, seed). */
export function plotSpec(domain: string, results: RunResult[]): Record<string, unknown> {
  const values = results.filter((r) => r.domain === domain).flatMap((r) => r.curve.map((p) => ({ method: r.method, seed: r.seed, rollouts: p.rollouts, meanAt8: p.meanAt8, label: p.label })));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json', width: 640, height: 300, background: 'white',
    title: `${domain}: test mean@8 against rollouts (training + search), one line per method and seed`,
    data: { values },
    mark: { type: 'line', point: true, opacity: 0.8 },
    encoding: {
      x: { field: 'rollouts', type: 'quantitative', title: 'rollouts (training + search)' },
      y: { field: 'meanAt8', type: 'quantitative', title: 'test mean@8' },
      color: { field: 'method', type: 'nominal' },
      detail: { field: 'seed', type: 'nominal' },
      tooltip: [{ field: 'method' }, { field: 'seed' }, { field: 'label' }, { field: 'meanAt8' }],
    },
  };
}

export interface Invocation { command: string; date: string; finishedAt: string | null; started: number; attached: number; skipped: number; failed: number }

interface ResultsFile {
  description: string;
  budget: number;
  sizes: BenchSizes & { name: string };
  domains: string[];
  methods: string[];
  seeds: number[];
  invocations: Invocation[];
  peaks: Record<string, number | null>;
  table: TableRow[];
  runs: RunResult[];
  missing: string[];
}

function previousInvocations(out: string): Invocation[] {
  try {
    return (JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as ResultsFile).invocations ?? [];
  } catch {
    return [];
  }
}

/** Writes results.json, results.md and one SVG per domain from the results at hand (finished runs only). */
export async function writeResults(out: string, opts: CompareOptions, planned: PlannedRun[], results: RunResult[], invocations: Invocation[]): Promise<string[]> {
  const { rows, peaks } = aggregate(results, opts.methods, opts.domains);
  const done = new Set(results.map((r) => r.workflowId));
  const missing = planned.filter((p) => !done.has(p.workflowId)).map((p) => p.workflowId);
  const file: ResultsFile = {
    description: 'whale bench compare: test mean@8 (D_test) of each method at an equal budget of training + search rollouts; test rollouts are not charged',
    budget: opts.budget, sizes: { name: opts.sizes, ...SIZES[opts.sizes] }, domains: opts.domains, methods: opts.methods, seeds: opts.seeds,
    invocations, peaks, table: rows, runs: results, missing,
  };
  const written: string[] = [];
  await writeFileAtomic(path.join(out, 'results.json'), JSON.stringify(file, null, 2) + '\n');
  written.push('results.json');
  const last = invocations[invocations.length - 1];
  const md = [
    '# Method comparison (`whale bench compare`)', '',
    `Budget: ${opts.budget} training + search rollouts per run (test rollouts not charged); sizes \`${opts.sizes}\`; seeds ${opts.seeds.join(', ')}.`,
    `Each cell is mean ± std over the finished seeds. Best mean@8 excludes the initial evaluation; "rollouts to weights-only peak" is the rollout count at the first test evaluation reaching the domain's weights-only peak.`,
    `Wall time is workflow start to close and includes any time a run waited for a worker${opts.parallel > 1 ? `; runs shared the machine ${opts.parallel} at a time` : ''}.`,
    missing.length ? `\n**${missing.length} of ${planned.length} planned runs are not finished yet**; rerun the same command to continue.` : `\nAll ${planned.length} planned runs finished.`,
    '',
    markdownTable(rows, peaks),
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

async function queuePollers(client: Client, name: string, type: temporal.api.enums.v1.TaskQueueType): Promise<number> {
  const res = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name }, taskQueueType: type });
  // A poller seen in the last two minutes is alive (long polls last about a minute).
  const recent = Date.now() - 120_000;
  return (res.pollers ?? []).filter((p) => ts(p.lastAccessTime as never) >= recent).length;
}

/** Starts the workers (as `whale demo` does) for queues nobody polls; returns the processes it started. */
async function ensureWorkers(client: Client, config: TemporalConfig, mode: CompareOptions['workers'], parallel: number, log: Logger): Promise<ChildProcess[]> {
  if (mode === 'none') return [];
  const T = temporal.api.enums.v1.TaskQueueType;
  const need: { kind: 'orchestration' | 'model' | 'proposer'; count: number }[] = [];
  const check = async (kind: 'orchestration' | 'model' | 'proposer', queue: string, type: temporal.api.enums.v1.TaskQueueType, count: number) => {
    if (mode === 'start' || (await queuePollers(client, queue, type)) === 0) need.push({ kind, count });
  };
  await check('orchestration', config.taskQueues.orchestration, T.TASK_QUEUE_TYPE_WORKFLOW, 1);
  await check('model', config.taskQueues.model, T.TASK_QUEUE_TYPE_ACTIVITY, Math.max(1, parallel));
  await check('proposer', config.taskQueues.proposer, T.TASK_QUEUE_TYPE_ACTIVITY, 1);
  const logDir = path.resolve(PROJECT_ROOT, '.data', 'logs');
  mkdirSync(logDir, { recursive: true });
  const started: ChildProcess[] = [];
  for (const { kind, count } of need) {
    for (let i = 0; i < count; i++) {
      const logFd = openSync(path.join(logDir, `bench-${kind}${count > 1 ? `-${i}` : ''}.log`), 'a');
      started.push(fork(path.join(PROJECT_ROOT, 'workers', 'main.ts'), [kind], { execArgv: ['--import', 'tsx'], stdio: ['ignore', logFd, logFd, 'ipc'] }));
    }
  }
  if (started.length) log(`started workers: ${need.map((n) => `${n.kind}${n.count > 1 ? ` x${n.count}` : ''}`).join(', ')} (logs in .data/logs/bench-*.log)`);
  else log('workers already poll every queue; using them');
  return started;
}

export interface CompareOutcome { results: RunResult[]; planned: PlannedRun[]; counts: Counts; failures: string[]; written: string[]; out: string }

/** Runs (or resumes) the comparison and writes the results folder. */
export async function runCompare(opts: CompareOptions, config: TemporalConfig, command: string, log: Logger = (l) => process.stderr.write(`[bench] ${l}\n`)): Promise<CompareOutcome> {
  for (const m of opts.methods) parseMethod(m);
  if (!Number.isInteger(opts.budget) || opts.budget < 1) throw new Error(`--budget must be a positive whole number of rollouts, got ${opts.budget}`);
  if (!Number.isInteger(opts.parallel) || opts.parallel < 1) throw new Error(`--parallel must be a whole number >= 1, got ${opts.parallel}`);
  const out = path.resolve(opts.out);
  const planned = planRuns(opts, config);
  const cached = planned.map((p) => readLocalResult(out, p));
  if (opts.plan) {
    for (const [i, p] of planned.entries()) log(`${cached[i] ? 'finished' : 'to run  '} ${p.workflowId}`);
    log(`${planned.length} runs, ${cached.filter(Boolean).length} finished in ${out}`);
    return { results: cached.filter((r): r is RunResult => r !== null), planned, counts: { skipped: 0, started: 0, attached: 0, failed: 0 }, failures: [], written: [], out };
  }
  const invocation: Invocation = { command, date: new Date().toISOString(), finishedAt: null, started: 0, attached: 0, skipped: 0, failed: 0 };
  const invocations = [...previousInvocations(out), invocation];
  const counts: Counts = { skipped: 0, started: 0, attached: 0, failed: 0 };
  const results: RunResult[] = cached.filter((r): r is RunResult => r !== null);
  for (const [i, p] of planned.entries()) if (cached[i]) log(`skip  ${p.workflowId}: finished (results folder)`);
  counts.skipped += results.length;
  const todo = planned.filter((_, i) => !cached[i]);
  const children: ChildProcess[] = [];
  const failures: string[] = [];
  let server: ChildProcess | null = null;
  try {
    if (todo.length) {
      if (!serverAnswers(config)) {
        log(`no Temporal server answers at ${config.address}: starting the dev server (data in ${config.devServer.dataDir})`);
        server = await startDevServer({ config, headless: true, quiet: true });
      }
      const client = await connectClient(config);
      // Runs a previous invocation finished (but did not cache, e.g. it was killed just then) need no worker.
      const pending: { run: PlannedRun; status: string | null }[] = [];
      for (const run of todo) {
        const state = await serverState(client, out, run);
        if ('result' in state) {
          counts.skipped += 1;
          results.push(state.result);
          log(`skip  ${run.workflowId}: finished (server)`);
        } else pending.push({ run, status: state.status });
      }
      if (pending.length) children.push(...(await ensureWorkers(client, config, opts.workers, opts.parallel, log)));
      let next = 0;
      const finishedHere: RunResult[] = [];
      const lane = async () => {
        while (next < pending.length) {
          const { run, status } = pending[next++];
          try {
            const r = await executeRun(client, config, out, run, status, log, counts);
            results.push(r);
            finishedHere.push(r);
          } catch (err) {
            counts.failed += 1;
            failures.push(`${run.workflowId}: ${(err as Error).message}`);
            log(`FAILED ${run.workflowId}: ${(err as Error).message}`);
          }
          Object.assign(invocation, counts);
          const left = pending.length - next;
          if (finishedHere.length && left > 0) {
            const perRun = finishedHere.reduce((a, r) => a + r.wallSeconds, 0) / finishedHere.length / opts.parallel;
            log(`${results.length} of ${planned.length} runs finished; at this invocation's mean of ${perRun.toFixed(0)} s per run, about ${((left * perRun) / 3600).toFixed(1)} h remain`);
          }
          await writeResults(out, opts, planned, sortResults(results, planned), invocations);
        }
      };
      await Promise.all(Array.from({ length: Math.min(opts.parallel, pending.length) }, lane));
    }
  } finally {
    await Promise.all(children.map((c) => stopChild(c, 40_000)));
    if (server) await stopChild(server, 15_000);
  }
  Object.assign(invocation, counts, { finishedAt: new Date().toISOString() });
  const written = await writeResults(out, opts, planned, sortResults(results, planned), invocations);
  return { results: sortResults(results, planned), planned, counts, failures, written, out };
}

function sortResults(results: RunResult[], planned: PlannedRun[]): RunResult[] {
  const order = new Map(planned.map((p, i) => [p.workflowId, i]));
  return [...results].sort((a, b) => (order.get(a.workflowId) ?? 0) - (order.get(b.workflowId) ?? 0));
}
