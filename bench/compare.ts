// `whale bench compare`: the paper's method comparison on the project's domains. Every (domain, method, seed)
// is a real whaleRun workflow at an equal rollout budget (training + search rollouts; test rollouts are
// not charged), with a deterministic workflow id from (domain, method, seed, budget, config hash), so the
// command is resumable and incremental: a finished run is read back (from the results folder, else from the
// server) and skipped, a running one is followed, a failed one is started again. This file runs the plan;
// compare-plan.ts builds it (run configs, ids), compare-history.ts reads results back, compare-stats.ts and
// compare-output.ts write results.json, results.md and the plots.
import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import type { TemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { ensureDevServer, POLLER_LIVE_MS, startWorkers, stopProcesses, unpolledKinds, type WorkerSpec } from '../cli/local-processes';
import type { WorkerKind } from '../workers/main';
import { writeFileAtomic } from '../store/artifact-store';
import type { RunSummary } from '../workflows/run-state';
import { benchWorkflowId, parseMethod, planRuns, type CompareOptions, type PlannedRun } from './compare-plan';
import { expandRunConfig } from '../workflows/run-config';
import { fetchLatestChain, resultFromHistories, type RunResult } from './compare-history';
import { fmt, previousInvocations, reportScope, writeResults, type Invocation } from './compare-output';
import { followResult } from './follow-result';

export * from './compare-plan';
export * from './compare-history';
export * from './compare-stats';
export { markdownTable, plotSpec, writeResults, type Invocation } from './compare-output';

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

type Scope = { domains: string[]; methods: string[]; seeds: number[] };

/**
 * The (domain, method, seed) of each finished run in the results folder that this invocation's budget, sizes
 * and proposer would plan under the same workflow id (the id carries the run config's hash), so the report
 * includes runs that earlier invocations made with another --methods, --domains or --seeds.
 */
function folderRuns(out: string, opts: CompareOptions & { proposer?: Record<string, unknown> | null }, config: TemporalConfig): Scope {
  const found: Scope = { domains: [], methods: [], seeds: [] };
  let files: string[];
  try {
    files = readdirSync(path.join(out, 'runs')).filter((f) => f.endsWith('.json'));
  } catch {
    return found;
  }
  for (const f of files) {
    let r: RunResult;
    try {
      r = JSON.parse(readFileSync(path.join(out, 'runs', f), 'utf8')) as RunResult;
      const [p] = withProposer(planRuns({ ...opts, domains: [r.domain], methods: [r.method], seeds: [r.seed] }, config), opts.proposer, opts.budget);
      if (r.status !== 'completed' || p?.workflowId !== r.workflowId) continue;
    } catch {
      continue; // a damaged file, or a method or domain this version no longer plans: not this comparison's
    }
    if (!found.domains.includes(r.domain)) found.domains.push(r.domain);
    if (!found.methods.includes(r.method)) found.methods.push(r.method);
    if (!found.seeds.includes(r.seed)) found.seeds.push(r.seed);
  }
  return found;
}

// The report's order: the preregistered kind of method first, then the single levers, then the paper protocol.
const METHOD_RANK = ['whale-fixed', 'whale-adaptive', 'weights-only', 'harness-only', 'stagewise', 'stagewise-harness-first', 'prompt-only'];
const DOMAIN_RANK = ['math', 'search-qa', 'chess'];

function methodRank(token: string): number {
  const paper = token.startsWith('paper:');
  const base = (paper ? token.slice('paper:'.length) : token).split(':')[0];
  const i = METHOD_RANK.indexOf(base);
  return (paper ? METHOD_RANK.length : 0) + (i < 0 ? METHOD_RANK.length : i);
}

/** The scopes joined, in a fixed order (a report made over several invocations reads the same whatever their order). */
function joinScopes(...scopes: Scope[]): Scope {
  const union = <T>(pick: (s: Scope) => T[]) => [...new Set(scopes.flatMap(pick))];
  const byRank = (rank: (v: string) => number) => (x: string, y: string) => rank(x) - rank(y) || x.localeCompare(y);
  const domainRank = (d: string) => (DOMAIN_RANK.includes(d) ? DOMAIN_RANK.indexOf(d) : DOMAIN_RANK.length);
  return {
    domains: union((s) => s.domains).sort(byRank(domainRank)),
    methods: union((s) => s.methods).sort(byRank(methodRank)),
    seeds: union((s) => s.seeds).sort((x, y) => x - y),
  };
}

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
  const summary = (await followResult(handle, run.workflowId, log)) as RunSummary;
  const d = await handle.describe();
  const r = resultFromHistories(run, await fetchLatestChain(client, run.workflowId, d.runId));
  if (!r) throw new Error(`run ${run.workflowId} returned but its history does not show a completed run`);
  log(`done  ${run.workflowId}: best ${fmt(summary.bestMeanAt8)} final ${fmt(summary.finalMeanAt8)} rollouts ${r.rolloutsUsed} wall ${r.wallSeconds.toFixed(0)} s`);
  await writeFileAtomic(runFile(out, run.workflowId), JSON.stringify(r, null, 2) + '\n');
  return r;
}

interface Counts { skipped: number; started: number; attached: number; failed: number }

interface Started { kind: WorkerKind; child: ChildProcess }

/** Forks the workers for `kinds` (one model worker per parallel run: sampling and training are the bottleneck). */
function forkKinds(kinds: readonly WorkerKind[], parallel: number): Started[] {
  const need: WorkerSpec[] = kinds.map((kind) => ({ kind, count: kind === 'model' ? Math.max(1, parallel) : 1 }));
  const children = startWorkers(need, 'bench');
  const order = need.flatMap((n) => Array.from({ length: n.count }, () => n.kind));
  return children.map((child, i) => ({ kind: order[i], child }));
}

const described = (kinds: readonly WorkerKind[], parallel: number) => kinds.map((k) => (k === 'model' && parallel > 1 ? `model x${parallel}` : k)).join(', ');

/** Starts the workers for queues nobody polls (`auto`) or for every queue (`start`); returns the processes it started. */
async function ensureWorkers(client: Client, config: TemporalConfig, mode: CompareOptions['workers'], parallel: number, log: Logger): Promise<Started[]> {
  if (mode === 'none') return [];
  const kinds = mode === 'start' ? (['orchestration', 'model', 'proposer'] as const) : await unpolledKinds(client, config);
  const started = forkKinds(kinds, parallel);
  if (started.length) log(`started workers: ${described(kinds, parallel)} (logs in .data/logs/bench-*.log)`);
  else log(`workers already poll every queue (each polled within the last ${POLLER_LIVE_MS / 1000} s); using them, and starting any whose pollers stop`);
  return started;
}

/** How often `auto` looks again for queues without a live poller while runs are pending. */
const WORKER_CHECK_MS = 15_000;

/**
 * `auto`, while runs are pending: starts workers for a queue whose pollers stopped (a killed invocation's
 * workers still look live for up to POLLER_LIVE_MS after their last poll; a worker may die mid-run) unless a
 * worker this invocation started for it is still running (it may still be starting). Returns the stop function.
 */
function watchWorkers(client: Client, config: TemporalConfig, parallel: number, log: Logger, started: Started[]): () => Promise<void> {
  let inFlight: Promise<void> | null = null;
  let stopped = false;
  const check = async () => {
    const own = new Set(started.filter((s) => s.child.exitCode === null && s.child.signalCode === null).map((s) => s.kind));
    const need = (await unpolledKinds(client, config)).filter((k) => !own.has(k));
    if (need.length === 0 || stopped) return;
    started.push(...forkKinds(need, parallel));
    log(`no live worker polls the ${need.join(', ')} queue${need.length > 1 ? 's' : ''} (earlier pollers stopped): started ${described(need, parallel)} (logs in .data/logs/bench-*.log)`);
  };
  const timer = setInterval(() => {
    if (inFlight) return;
    inFlight = check()
      .catch((err: Error) => log(`worker check failed (tried again in ${WORKER_CHECK_MS / 1000} s): ${err.message}`))
      .finally(() => (inFlight = null));
  }, WORKER_CHECK_MS);
  // Stopping waits for a check in flight, so no worker is forked after the caller stops the ones it knows.
  return async () => {
    stopped = true;
    clearInterval(timer);
    await inFlight;
  };
}

/**
 * `--proposer <file>`: every planned run with this `harness.proposer` (a coding agent, a chat model). The runs get
 * their own workflow ids (the config hash changes), so they never mix with the catalogue-search runs; without
 * it the plan is untouched.
 */
export function withProposer(planned: PlannedRun[], proposer: Record<string, unknown> | null | undefined, budget: number): PlannedRun[] {
  if (!proposer) return planned;
  return planned.map((p) => {
    const { execution, ...rest } = p.input;
    const input: Record<string, unknown> = { ...rest, harness: { ...(rest.harness as Record<string, unknown>), proposer } };
    const expanded = expandRunConfig(input);
    if (!expanded.ok) throw new Error(`--proposer: the run config of ${p.method} on ${p.domain} is invalid with this proposer: ${expanded.problems.join('; ')}`);
    const workflowId = benchWorkflowId(p.method, p.domain, p.seed, budget, input);
    return { ...p, workflowId, input: execution === undefined ? input : { ...input, execution } };
  });
}

export interface CompareOutcome { results: RunResult[]; planned: PlannedRun[]; counts: Counts; failures: string[]; written: string[]; out: string }

/** Runs (or resumes) the comparison and writes the results folder. */
export async function runCompare(opts: CompareOptions & { proposer?: Record<string, unknown> | null }, config: TemporalConfig, command: string, log: Logger = (l) => process.stderr.write(`[bench] ${l}\n`)): Promise<CompareOutcome> {
  for (const m of opts.methods) parseMethod(m);
  if (!Number.isInteger(opts.budget) || opts.budget < 1) throw new Error(`--budget must be a positive whole number of rollouts, got ${opts.budget}`);
  if (!Number.isInteger(opts.parallel) || opts.parallel < 1) throw new Error(`--parallel must be a whole number >= 1, got ${opts.parallel}`);
  const out = path.resolve(opts.out);
  const planned = withProposer(planRuns(opts, config), opts.proposer, opts.budget);
  const cached = planned.map((p) => readLocalResult(out, p));
  if (opts.plan) {
    for (const [i, p] of planned.entries()) log(`${cached[i] ? 'finished' : 'to run  '} ${p.workflowId}`);
    log(`${planned.length} runs, ${cached.filter(Boolean).length} finished in ${out}`);
    return { results: cached.filter((r): r is RunResult => r !== null), planned, counts: { skipped: 0, started: 0, attached: 0, failed: 0 }, failures: [], written: [], out };
  }
  // The report covers the folder's whole comparison: earlier invocations' plans joined with this one's, so that
  // running a part (one method, one domain) does not leave results.md showing that part alone. --report takes
  // the folder's comparison alone (its earlier plan and its runs) and runs nothing.
  const own: Scope = opts.report ? { domains: [], methods: [], seeds: [] } : opts;
  const scope = joinScopes(reportScope(out, opts, opts.proposer), own, folderRuns(out, opts, config));
  const reportOpts = { ...opts, domains: scope.domains, methods: scope.methods, seeds: scope.seeds };
  const reportPlanned = scope.methods.length ? withProposer(planRuns(reportOpts, config), opts.proposer, opts.budget) : [];
  const inThisPlan = new Set(planned.map((p) => p.workflowId));
  const earlier = reportPlanned.filter((p) => opts.report || !inThisPlan.has(p.workflowId)).map((p) => readLocalResult(out, p)).filter((r): r is RunResult => r !== null);
  if (opts.report) {
    if (earlier.length === 0) {
      throw new Error(`--report: ${out} holds no finished run of a comparison at --budget ${opts.budget} --sizes ${opts.sizes}${opts.proposer ? ' with this --proposer' : ''}: give the budget and sizes its runs were made with, or run the comparison first`);
    }
    const written = await writeResults(out, reportOpts, reportPlanned, sortResults(earlier, reportPlanned), previousInvocations(out));
    log(`report over ${earlier.length} of ${reportPlanned.length} planned runs (${scope.domains.join(', ')}; ${scope.methods.length} methods; seeds ${scope.seeds.join(', ')}); nothing was run`);
    return { results: sortResults(earlier, reportPlanned), planned: reportPlanned, counts: { skipped: 0, started: 0, attached: 0, failed: 0 }, failures: [], written, out };
  }
  if (reportPlanned.length > planned.length) {
    log(`results.md covers the folder's comparison: ${reportPlanned.length} planned runs (${scope.domains.join(', ')}; ${scope.methods.length} methods; seeds ${scope.seeds.join(', ')}), ${earlier.length} of them finished by earlier invocations outside this one's plan`);
  }
  const invocation: Invocation = { command, date: new Date().toISOString(), finishedAt: null, lastRunAt: null, started: 0, attached: 0, skipped: 0, failed: 0 };
  const invocations = [...previousInvocations(out), invocation];
  const report = (results: RunResult[]) => writeResults(out, reportOpts, reportPlanned, sortResults([...earlier, ...results], reportPlanned), invocations);
  const counts: Counts = { skipped: 0, started: 0, attached: 0, failed: 0 };
  const results: RunResult[] = cached.filter((r): r is RunResult => r !== null);
  for (const [i, p] of planned.entries()) if (cached[i]) log(`skip  ${p.workflowId}: finished (results folder)`);
  counts.skipped += results.length;
  const todo = planned.filter((_, i) => !cached[i]);
  const children: Started[] = [];
  const failures: string[] = [];
  let server: ChildProcess | null = null;
  let stopWatch = async () => {};
  try {
    if (todo.length) {
      server = await ensureDevServer(config, log, { headless: true });
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
      if (pending.length) {
        children.push(...(await ensureWorkers(client, config, opts.workers, opts.parallel, log)));
        if (opts.workers === 'auto') stopWatch = watchWorkers(client, config, opts.parallel, log, children);
      }
      let next = 0;
      const finishedHere: RunResult[] = [];
      const lane = async () => {
        while (next < pending.length) {
          const { run, status } = pending[next++];
          try {
            const r = await executeRun(client, config, out, run, status, log, counts);
            results.push(r);
            finishedHere.push(r);
            invocation.lastRunAt = new Date().toISOString();
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
          await report(results);
        }
      };
      await Promise.all(Array.from({ length: Math.min(opts.parallel, pending.length) }, lane));
    }
  } finally {
    await stopWatch();
    await stopProcesses(children.map((s) => s.child), server);
  }
  Object.assign(invocation, counts, { finishedAt: new Date().toISOString() });
  const written = await report(results);
  return { results: sortResults(results, planned), planned, counts, failures, written, out };
}

function sortResults(results: RunResult[], planned: PlannedRun[]): RunResult[] {
  const order = new Map(planned.map((p, i) => [p.workflowId, i]));
  return [...results].sort((a, b) => (order.get(a.workflowId) ?? 0) - (order.get(b.workflowId) ?? 0));
}
