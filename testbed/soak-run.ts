// The fault-injection soak, as a library (scripts/soak.ts is its command line; tests/faults/soak-reduced and
// server-loss run it small). A real dev server and one worker process per task queue; a small deterministic
// WHALE run (weight and harness phases) runs once uninterrupted (or its result comes from a cache) and once
// under kills from a seeded schedule: SIGKILL/SIGTERM of the model worker during rollouts, fine-tune steps,
// checkpoint writes and evaluations, of the proposer worker during its activities, of the orchestration
// worker between and inside workflow tasks, and of the dev server (restarted on the same database). Then it
// compares decisions and hashes, and counts work executed more than once from the workers' progress journal
// (testbed/journal-worker.ts). docs/faults.md explains the counting.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, rmSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { startFaultCluster, activityResults, type FaultCluster, type WorkerKind } from './fault-cluster';
import type { JournalLine } from './journal-worker';
import { ROOT } from './env';
import { cachedReferenceOrLock, releaseReference, storeReference } from './reference-cache';
import type { RunSummary } from '../workflows/run-state';
import type { EvaluateTestResult, FineTuneStepResult } from '../activities/types';
import { sha256Hex } from '../store/artifact-store';
import { Rng } from '../common/rng';

export type KillTarget =
  | 'model-rollout' | 'model-finetune' | 'model-checkpoint' | 'model-eval' | 'proposer' | 'orchestration-between' | 'orchestration-inside' | 'server';

export const WORKER_TARGETS: readonly KillTarget[] = [
  'model-rollout', 'model-finetune', 'model-checkpoint', 'model-eval', 'proposer', 'orchestration-between', 'orchestration-inside',
];
const TARGET_WEIGHT: Record<KillTarget, number> = {
  'model-rollout': 3, 'model-finetune': 3, 'model-checkpoint': 2, 'model-eval': 2, proposer: 3, 'orchestration-between': 2, 'orchestration-inside': 2, server: 0,
};

export interface SoakOptions {
  seed: number;
  /** Kills in all (worker and server kills). */
  kills: number;
  /** How many of `kills` kill the dev server. */
  serverKills: number;
  /** Only these worker targets (default: all). */
  targets?: readonly KillTarget[];
  /** A fixed order of worker targets instead of seeded draws (tests use it for coverage); kill n takes sequence[n % length]. */
  sequence?: readonly KillTarget[];
  /** Total weight steps of the run, and steps per weight phase (a harness phase between weight phases). */
  steps: number;
  stepsPerPhase: number;
  /** Heartbeat timeout of every activity, seconds (the SDK heartbeats every 80 % of it). */
  heartbeatSeconds: number;
  /** The run's sizes (default SOAK_RUN_SIZE); the tests run smaller (their kills need only a few activities). */
  runSize?: SoakRunSize;
  /**
   * WHALE_PARTIAL_CHECKPOINT_MS of the model workers (default 0: a partial checkpoint after every minibatch, the
   * resume point of a step killed mid-way). Saving one costs about as much as training a minibatch; a soak that
   * kills no model worker mid step (the tests) can take the product's default (2000).
   */
  partialCheckpointMs?: number;
  /** Reference result: a JSON file to read (or write after an uninterrupted run). null: always run it. */
  referenceCache: string | null;
  /** Give up (failed) after this long. */
  deadlineMs: number;
  port?: number;
  keepDir?: boolean;
  log?: (line: string) => void;
}

/** Prompts per weight step (x 8 samples), and the tasks D_harness and D_test are cut to. */
export interface SoakRunSize {
  promptsPerStep: number;
  tasks: number;
}
export const SOAK_RUN_SIZE: SoakRunSize = { promptsPerStep: 16, tasks: 16 };

/** The small deterministic run the soak uses (sizes shrunk from presets/demo.json). */
export function soakRunConfig(seed: number, steps: number, stepsPerPhase: number, heartbeatSeconds: number, size: SoakRunSize = SOAK_RUN_SIZE): Record<string, unknown> {
  const hb = `${heartbeatSeconds}s`;
  // D_weight has 2488 prompts: 16 per step is 155.5 steps per epoch, so E = k / 155.5 is k steps per weight phase.
  const stepsPerEpoch = 2488 / size.promptsPerStep;
  return {
    version: 1, name: `soak seed ${seed}`, method: 'whale-fixed', domain: 'math', seed,
    weight: { promptsPerStep: size.promptsPerStep, samplesPerPrompt: 8, learningRate: 1e-4, minibatchSize: 4, deterministic: true },
    switching: { kind: 'fixed', weightEpochs: Math.round((stepsPerPhase / stepsPerEpoch) * 1e6) / 1e6, harnessRounds: 2 },
    harness: { candidatesPerRound: 2, taskLimit: size.tasks },
    budget: { totalWeightSteps: steps },
    test: { everyEpochs: 1000, samplesPerTask: 2, taskLimit: size.tasks },
    execution: {
      rollout: { heartbeatTimeout: hb }, fineTune: { heartbeatTimeout: hb }, evaluate: { heartbeatTimeout: hb }, propose: { heartbeatTimeout: hb },
    },
  };
}

/** What an uninterrupted and an interrupted run must agree on (deterministic mode). */
export interface RunOutcome {
  status: string;
  summary: RunSummary | null;
  decisions: unknown[];
  stepCheckpoints: string[];
  testScores: number[];
  durationMs: number;
  /** Units executed by the run's activities, from the journal (rollouts finished, minibatches trained). */
  executed: { rollouts: number; minibatches: number };
}

export interface KillRecord {
  n: number;
  /** Since the killed run started, and the wall clock (ms since the epoch). */
  atMs: number;
  atEpochMs: number;
  target: KillTarget;
  signal: NodeJS.Signals;
  /** What the killed process was doing (activity, attempt, progress), or 'idle'. */
  state: string;
  restartDelayMs: number;
  recoveryMs: number | null;
  /** Filled by the analysis: work executed again because of this kill. */
  redoneRollouts: number;
  redoneMinibatches: number;
  /** Wall time of completed work that was redone, and the bound: one heartbeat interval plus one unit. */
  redoneSeconds: number;
  boundSeconds: number;
  withinBound: boolean;
  note: string;
  /** The activity a worker kill interrupted (run id | activity id). */
  victimAid?: string;
}

export interface SoakReport {
  options: SoakOptions;
  config: Record<string, unknown>;
  reference: RunOutcome & { fromCache: boolean };
  killed: RunOutcome;
  kills: KillRecord[];
  unplannedExits: string[];
  lostWork: { rollouts: number; minibatches: number; byJournalDifference: { rollouts: number; minibatches: number } };
  history: { activityRetries: Record<string, number>; workflowTaskTimeouts: number; workflowTaskFailures: number };
  store: { objects: number; corrupt: string[]; orphanTmp: number };
  comparisons: { name: string; reference: string; killed: string; equal: boolean }[];
  failures: string[];
  dir: string;
}

// ---------------------------------------------------------------------------------------------- utilities

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads the journal incrementally (the last line may be torn by a SIGKILL: it is kept until complete or skipped). */
class JournalTail {
  lines: JournalLine[] = [];
  private offset = 0;
  private rest = '';
  constructor(readonly file: string) {}
  poll(): JournalLine[] {
    if (!existsSync(this.file)) return [];
    const fd = openSync(this.file, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size <= this.offset) return [];
      const buf = Buffer.alloc(size - this.offset);
      readSync(fd, buf, 0, buf.length, this.offset);
      this.offset = size;
      const text = this.rest + buf.toString('utf8');
      const parts = text.split('\n');
      this.rest = parts.pop() ?? '';
      const fresh: JournalLine[] = [];
      for (const p of parts) {
        try {
          fresh.push(JSON.parse(p) as JournalLine);
        } catch {
          // A line torn by a SIGKILL mid-write, then continued by the next process: not a record.
        }
      }
      this.lines.push(...fresh);
      return fresh;
    } finally {
      closeSync(fd);
    }
  }
}

interface Attempt {
  key: string;
  type: string;
  wf: string;
  aid: string;
  attempt: number;
  pid: number;
  start: number;
  end: number | null;
  ok: boolean | null;
  resumeMinibatch: number;
  /** [time, absolute units done] after each heartbeat. */
  beats: { t: number; done: number }[];
}

const ROLLOUT_TYPES = new Set(['rolloutBatch', 'evaluateTest', 'evaluateHarness']);

function attemptsOf(lines: JournalLine[]): Attempt[] {
  const map = new Map<string, Attempt>();
  for (const l of lines) {
    const key = `${l.wf}|${l.run}|${l.aid}|${l.attempt}|${l.pid}`;
    let a = map.get(key);
    if (!a) {
      a = { key, type: l.type, wf: l.wf, aid: `${l.run}|${l.aid}`, attempt: l.attempt, pid: l.pid, start: l.t, end: null, ok: null, resumeMinibatch: 0, beats: [] };
      map.set(key, a);
    }
    if (l.ev === 'start') {
      a.start = l.t;
      if (l.type === 'fineTuneStep' && l.d?.kind === 'fine-tune' && typeof l.d.minibatch === 'number') a.resumeMinibatch = l.d.minibatch;
    } else if (l.ev === 'hb') {
      const done = l.type === 'fineTuneStep' ? (typeof l.d?.progress === 'number' ? l.d.progress : null) : (typeof l.d?.finished === 'number' ? l.d.finished : null);
      if (done !== null) a.beats.push({ t: l.t, done });
    } else {
      a.end = l.t;
      a.ok = l.ok ?? false;
    }
  }
  return [...map.values()].sort((x, y) => x.start - y.start);
}

function unitsDone(a: Attempt): number {
  return a.beats.length ? Math.max(...a.beats.map((b) => b.done)) : 0;
}

/** Units an attempt executed itself: for a fine-tune step the minibatches after its resume point. */
function unitsExecuted(a: Attempt): number {
  if (a.type === 'fineTuneStep') return Math.max(0, unitsDone(a) - a.resumeMinibatch);
  return unitsDone(a);
}

function executedTotals(attempts: Attempt[]): { rollouts: number; minibatches: number } {
  let rollouts = 0;
  let minibatches = 0;
  for (const a of attempts) {
    if (a.type === 'fineTuneStep') minibatches += unitsExecuted(a);
    else if (ROLLOUT_TYPES.has(a.type)) rollouts += unitsExecuted(a);
  }
  return { rollouts, minibatches };
}

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// ------------------------------------------------------------------------------------------- run outcome

async function outcomeOf(cluster: FaultCluster, workflowId: string, startedAt: number, journal: JournalLine[]): Promise<RunOutcome> {
  const handle = cluster.client.workflow.getHandle(workflowId);
  const d = await handle.describe();
  const summary = d.status.name === 'COMPLETED' ? ((await handle.result()) as RunSummary) : null;
  const steps = await activityResults<FineTuneStepResult>(cluster.client, workflowId, 'fineTuneStep');
  const tests = await activityResults<EvaluateTestResult>(cluster.client, workflowId, 'evaluateTest');
  const attempts = attemptsOf(journal.filter((l) => l.wf === workflowId));
  return {
    status: d.status.name,
    summary,
    decisions: (summary?.phases ?? []).map((p) => ({
      kind: p.kind, index: p.index, startStep: p.startStep, endStep: p.endStep, proposalRounds: p.proposalRounds, rule: p.rule,
      acceptedHarness: p.acceptedHarness, acceptedSuccess: p.acceptedSuccess,
    })),
    stepCheckpoints: steps.map((s) => s.checkpoint.sha256),
    testScores: tests.map((t) => t.meanAt8),
    durationMs: Date.now() - startedAt,
    executed: executedTotals(attempts),
  };
}

function sourceKey(config: Record<string, unknown>): string {
  const git = (args: string[]) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    } catch {
      return `no git: ${Date.now()}`;
    }
  };
  const product = ['activities', 'agent', 'model', 'training', 'workflows', 'domains', 'store', 'harness-sandbox', 'workers', 'data'];
  // The committed trees of the product folders (unrelated commits keep the key) and any uncommitted change there.
  const state = product.map((d) => git(['rev-parse', `HEAD:${d}`])).join('') + git(['diff', 'HEAD', '--', ...product]) + git(['status', '--porcelain', '--', ...product]);
  // Timeouts do not change what a deterministic run computes: runs that differ only there share a reference.
  const { execution: _timeouts, ...computed } = config;
  void _timeouts;
  return createHash('sha256').update(JSON.stringify(computed)).update(state).digest('hex').slice(0, 16);
}

// ---------------------------------------------------------------------------------------------- the soak

export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const log = opts.log ?? (() => undefined);
  const schedule = new Rng(opts.seed * 2654435761 + 0x50a4);
  const rng = () => schedule.next();
  const config = soakRunConfig(opts.seed, opts.steps, opts.stepsPerPhase, opts.heartbeatSeconds, opts.runSize);
  const hbIntervalS = 0.8 * opts.heartbeatSeconds;
  const journalFile = path.join(ROOT, '.data', 'soak', `journal-${process.pid}-${Date.now()}.jsonl`);
  mkdirSync(path.dirname(journalFile), { recursive: true });
  const cluster = await startFaultCluster({
    port: opts.port, journal: journalFile, keepDir: opts.keepDir,
    // One trainer and sampler thread (deterministic numerics); by default a partial checkpoint after every
    // minibatch (the resume point a killed step restarts from); a short SIGTERM grace so a terminated worker stops soon.
    workerEnv: { WHALE_MODEL_THREADS: '1', WHALE_PARTIAL_CHECKPOINT_MS: String(opts.partialCheckpointMs ?? 0), WHALE_SHUTDOWN_GRACE: '5s' },
  });
  const tail = new JournalTail(journalFile);
  const interrupted = (sig: NodeJS.Signals) => {
    stopping = true;
    void cluster.teardown().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const kinds: WorkerKind[] = ['orchestration', 'model', 'proposer'];
  const planned = new Set<ChildProcess>();
  const unplannedExits: string[] = [];
  const pidKind = new Map<number, WorkerKind>();
  const failures: string[] = [];
  const t0 = Date.now();
  let stopping = false;

  const start = (kind: WorkerKind): ChildProcess => {
    const child = cluster.startWorker(kind);
    if (child.pid) pidKind.set(child.pid, kind);
    child.once('exit', (code, signal) => {
      if (planned.has(child) || stopping) return;
      // A worker that dies on its own (e.g. it cannot reach a restarting server): note it and start another.
      unplannedExits.push(`${kind} worker ${child.pid} exited by itself (code ${code}, signal ${signal}) at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      log(`  ! ${unplannedExits[unplannedExits.length - 1]}; starting another`);
      if (cluster.workers.get(kind) === child) setTimeout(() => { if (!stopping) start(kind); }, 1000);
    });
    return child;
  };
  const killWorker = async (kind: WorkerKind, signal: NodeJS.Signals) => {
    const child = cluster.workers.get(kind);
    if (child) planned.add(child);
    await cluster.kill(kind, signal);
  };

  try {
    for (const k of kinds) start(k);
    const q = cluster.config.taskQueues.orchestration;
    const stamp = Date.now().toString(36);

    // 1. The reference: an uninterrupted run (or its cached outcome for this config and source tree; a soak
    // started beside this one with the same config runs it once for both).
    const cacheFile = opts.referenceCache ? opts.referenceCache.replace('{key}', sourceKey(config)) : null;
    let reference: RunOutcome & { fromCache: boolean };
    const cached = cacheFile ? await cachedReferenceOrLock<RunOutcome>(cacheFile, opts.deadlineMs, log) : null;
    if (cacheFile && cached) {
      reference = { ...cached, fromCache: true };
      log(`reference: ${cacheFile} (cached uninterrupted run, ${(reference.durationMs / 1000).toFixed(0)} s)`);
    } else {
      try {
        const id = `soak-${opts.seed}-reference-${stamp}`;
        log(`reference: uninterrupted run ${id} ...`);
        const began = Date.now();
        await cluster.client.workflow.start('whaleRun', { taskQueue: q, workflowId: id, args: [config] });
        await withDeadline(waitClosed(cluster, id, Date.now() + opts.deadlineMs), opts.deadlineMs, `the uninterrupted run ${id}`);
        tail.poll();
        reference = { ...(await outcomeOf(cluster, id, began, tail.lines)), fromCache: false };
        log(`reference: ${reference.status} in ${(reference.durationMs / 1000).toFixed(0)} s, final checkpoint ${reference.summary?.finalCheckpoint.sha256.slice(0, 16)}`);
        if (cacheFile && reference.status === 'COMPLETED') storeReference(cacheFile, { ...reference, fromCache: undefined });
      } finally {
        if (cacheFile) releaseReference(cacheFile);
      }
    }

    // 2. The same run under kills.
    const id = `soak-${opts.seed}-killed-${stamp}`;
    const began = Date.now();
    log(`killed run ${id}: ${opts.kills} kills (${opts.serverKills} of the dev server), seed ${opts.seed}`);
    await cluster.client.workflow.start('whaleRun', { taskQueue: q, workflowId: id, args: [config] });
    let done = false;
    const result = waitClosed(cluster, id, began + opts.deadlineMs).then(() => (done = true));
    const kills = await injectKills({ opts, rng, cluster, tail, wf: id, isDone: () => done, start, killWorker, log, t0: began, deadline: began + opts.deadlineMs });
    await withDeadline(result, Math.max(1000, began + opts.deadlineMs - Date.now()), `the killed run ${id}`);
    tail.poll();
    const killed = await outcomeOf(cluster, id, began, tail.lines);
    log(`killed run: ${killed.status} in ${(killed.durationMs / 1000).toFixed(0)} s`);

    // 3. Analysis.
    const attempts = attemptsOf(tail.lines.filter((l) => l.wf === id));
    attributeLostWork(kills, attempts, pidKind, hbIntervalS);
    const lost = { rollouts: kills.reduce((a, k) => a + k.redoneRollouts, 0), minibatches: kills.reduce((a, k) => a + k.redoneMinibatches, 0) };
    const redoneAll = redoneUnits(attempts);
    const byJournalDifference = { rollouts: killed.executed.rollouts - reference.executed.rollouts, minibatches: killed.executed.minibatches - reference.executed.minibatches };
    const history = await historyFacts(cluster, id);
    const store = storeIntegrity(path.join(cluster.dir, 'artifacts'));

    const comparisons = compare(reference, killed);
    if (killed.status !== 'COMPLETED') failures.push(`the killed run ended ${killed.status}, not COMPLETED`);
    if (reference.status !== 'COMPLETED') failures.push(`the reference run ended ${reference.status}, not COMPLETED`);
    for (const c of comparisons) if (!c.equal) failures.push(`${c.name} differs: reference ${c.reference}, killed ${c.killed}`);
    if (kills.length < opts.kills) failures.push(`only ${kills.length} of ${opts.kills} kills were injected before the run ended: raise --steps`);
    const over = kills.filter((k) => !k.withinBound);
    if (over.length) failures.push(`${over.length} kill(s) lost more than one heartbeat interval plus the interrupted unit: ${over.map((k) => `#${k.n}`).join(', ')}`);
    if (redoneAll.rollouts !== lost.rollouts || redoneAll.minibatches !== lost.minibatches) {
      failures.push(`work executed twice that no kill explains: ${redoneAll.rollouts - lost.rollouts} rollouts, ${redoneAll.minibatches - lost.minibatches} minibatches`);
    }
    if (store.corrupt.length) failures.push(`corrupt artifacts in the store: ${store.corrupt.join(', ')}`);
    if (unplannedExits.length) failures.push(`${unplannedExits.length} worker(s) exited without being killed`);
    const serverOnly = opts.serverKills === opts.kills;
    if (serverOnly && (lost.rollouts > 0 || lost.minibatches > 0)) failures.push('server kills lost work (expected nothing lost)');

    return {
      options: opts, config, reference, killed, kills, unplannedExits,
      lostWork: { ...lost, byJournalDifference }, history, store, comparisons, failures, dir: cluster.dir,
    };
  } finally {
    stopping = true;
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await cluster.teardown();
    // The journal goes with the temp folder unless it is kept (--keep) for a look at the attempts.
    if (!opts.keepDir) rmSync(journalFile, { force: true });
  }
}

/** Resolves once the run is closed (completed, failed, ...); waiting survives the server going away meanwhile. */
async function waitClosed(cluster: FaultCluster, workflowId: string, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    try {
      await cluster.client.workflow.getHandle(workflowId).result();
      return;
    } catch {
      // Either the run failed (closed: done) or the server was unreachable for a while (ask again).
      try {
        const d = await cluster.client.workflow.getHandle(workflowId).describe();
        if (d.status.name !== 'RUNNING') return;
      } catch {
        // Still unreachable.
      }
      await sleep(1000);
    }
  }
  throw new Error(`run ${workflowId} did not close before the deadline`);
}

async function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`timed out after ${(ms / 1000).toFixed(0)} s waiting for ${what}`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

// ------------------------------------------------------------------------------------------ kill schedule

interface InjectContext {
  opts: SoakOptions;
  rng: () => number;
  cluster: FaultCluster;
  tail: JournalTail;
  wf: string;
  isDone: () => boolean;
  start: (kind: WorkerKind) => ChildProcess;
  killWorker: (kind: WorkerKind, signal: NodeJS.Signals) => Promise<void>;
  log: (line: string) => void;
  t0: number;
  deadline: number;
}

/** The attempt running now on a worker process (started, not ended), from the journal. */
function running(lines: JournalLine[], pid: number | undefined, wf: string): Attempt | null {
  if (pid === undefined) return null;
  const mine = attemptsOf(lines.filter((l) => l.pid === pid && l.wf === wf));
  const open = mine.filter((a) => a.end === null);
  return open.length ? open[open.length - 1] : null;
}

function describeAttempt(a: Attempt | null): string {
  if (!a) return 'idle';
  const done = unitsDone(a);
  const unit = a.type === 'fineTuneStep' ? 'minibatches' : ROLLOUT_TYPES.has(a.type) ? 'rollouts finished' : 'beats';
  return `${a.type} attempt ${a.attempt}, ${a.type === 'fineTuneStep' || ROLLOUT_TYPES.has(a.type) ? done : a.beats.length} ${unit}`;
}

async function injectKills(c: InjectContext): Promise<KillRecord[]> {
  const { opts, rng, cluster, tail, wf } = c;
  const targets = opts.targets ?? WORKER_TARGETS;
  const kills: KillRecord[] = [];
  // Which kills hit the server: seeded positions, spread over the schedule.
  const serverAt = new Set<number>();
  while (serverAt.size < Math.min(opts.serverKills, opts.kills)) serverAt.add(Math.floor(rng() * opts.kills));
  const done = new Map<KillTarget, number>();
  const pid = (k: WorkerKind) => cluster.workers.get(k)?.pid;

  // Each activity is killed at most once, so the kills spread over the run instead of hitting one
  // activity again and again while a restarted worker warms up.
  const killedAids = new Set<string>();
  const fresh = (a: Attempt | null) => (a && !killedAids.has(a.aid) ? a : null);
  const available = (): KillTarget[] => {
    const lines = tail.lines;
    const model = fresh(running(lines, pid('model'), wf));
    const proposer = fresh(running(lines, pid('proposer'), wf));
    const out: KillTarget[] = ['orchestration-between', 'orchestration-inside'];
    if (model?.type === 'rolloutBatch') out.push('model-rollout');
    if (model?.type === 'fineTuneStep' && model.beats.length > 0) out.push('model-finetune', 'model-checkpoint');
    if (model?.type === 'evaluateHarness' || model?.type === 'evaluateTest') out.push('model-eval');
    if (proposer) out.push('proposer');
    return out.filter((t) => targets.includes(t));
  };

  let missed = false;
  for (let n = 0; n < opts.kills; n++) {
    if (c.isDone() || Date.now() > c.deadline) break;
    // A seeded gap after each kill (injection timing, not a wait for a state); none after a missed state.
    if (!missed) await sleep(1000 + rng() * 4000);
    missed = false;
    const isServer = serverAt.has(n);
    let target: KillTarget | null = isServer ? 'server' : null;
    // Wait (polling the journal) until some target's state holds, then pick among those by seeded weights.
    while (!target && !c.isDone() && Date.now() < c.deadline) {
      tail.poll();
      const all = available();
      const wanted = opts.sequence?.length ? opts.sequence[kills.length % opts.sequence.length] : null;
      const now = wanted ? all.filter((t) => t === wanted) : all;
      // Prefer the rarer states when they show up (proposer activities are short); orchestration kills are
      // always possible, so they are taken only now and then when nothing else is running.
      const rare = now.filter((t) => t === 'proposer' || t === 'model-eval');
      const pool = rare.length && rng() < 0.7 ? rare : now;
      const poolWeights = pool.map((t) => TARGET_WEIGHT[t] / (1 + (done.get(t) ?? 0)));
      if (pool.length && (wanted || pool.some((t) => t !== 'orchestration-between' && t !== 'orchestration-inside') || rng() < 0.15)) {
        let r = rng() * poolWeights.reduce((a, b) => a + b, 0);
        target = pool[pool.length - 1];
        for (let i = 0; i < pool.length; i++) if ((r -= poolWeights[i]) <= 0) { target = pool[i]; break; }
      } else {
        // Poll often: some states (proposer activities, harness evaluations) last a few hundred ms.
        await sleep(20);
      }
    }
    if (!target || c.isDone()) break;
    const signal: NodeJS.Signals = target === 'server' ? (rng() < 0.8 ? 'SIGKILL' : 'SIGTERM') : rng() < 0.7 ? 'SIGKILL' : 'SIGTERM';
    const restartDelayMs = Math.round(target === 'server' ? 500 + rng() * 2500 : 200 + rng() * 3800);
    const inStateDelay = rng();
    const rec = await killOnce(c, n + 1, target, signal, restartDelayMs, inStateDelay);
    if (!rec) {
      n--; // the state passed before the kill: pick again (the schedule's draws continue)
      missed = true;
      continue;
    }
    done.set(target, (done.get(target) ?? 0) + 1);
    if (rec.victimAid) killedAids.add(rec.victimAid);
    kills.push(rec);
    c.log(`  kill ${String(rec.n).padStart(2)} at ${(rec.atMs / 1000).toFixed(1).padStart(6)} s  ${rec.target.padEnd(21)} ${rec.signal.padEnd(7)} ${rec.state}; restart after ${(rec.restartDelayMs / 1000).toFixed(1)} s, recovered in ${rec.recoveryMs === null ? '?' : (rec.recoveryMs / 1000).toFixed(1)} s`);
  }
  return kills;
}

async function killOnce(c: InjectContext, n: number, target: KillTarget, signal: NodeJS.Signals, restartDelayMs: number, u: number): Promise<KillRecord | null> {
  const { cluster, tail, wf } = c;
  const pid = (k: WorkerKind) => cluster.workers.get(k)?.pid;
  const base = (state: string): KillRecord => ({
    n, atMs: Date.now() - c.t0, atEpochMs: Date.now(), target, signal, state, restartDelayMs, recoveryMs: null,
    redoneRollouts: 0, redoneMinibatches: 0, redoneSeconds: 0, boundSeconds: 0, withinBound: true, note: '',
  });

  if (target === 'server') {
    // While work is in flight: wait (polling) for an activity to run, then a seeded moment into it.
    const until = Date.now() + 5 * 60_000;
    while (!c.isDone() && Date.now() < until) {
      tail.poll();
      if ((['model', 'proposer'] as const).some((k) => running(tail.lines, pid(k), wf))) break;
      await sleep(100);
    }
    await sleep(u * 3000);
    tail.poll();
    const states = (['model', 'proposer'] as const).map((k) => running(tail.lines, pid(k), wf)).filter((a) => a).map(describeAttempt);
    const rec = base(`in flight: ${states.join('; ') || 'no activity'}`);
    await cluster.killServer(signal);
    await sleep(restartDelayMs);
    const began = Date.now();
    await cluster.restartServer();
    await waitProgress(c, began);
    rec.recoveryMs = Date.now() - began;
    return rec;
  }

  if (target === 'orchestration-between' || target === 'orchestration-inside') {
    let state = 'between workflow tasks';
    if (target === 'orchestration-inside') {
      // Right after an activity attempt ends its completion becomes a workflow task: kill as it runs.
      const seen = tail.lines.length;
      const deadline = Date.now() + 120_000;
      let ended: JournalLine | undefined;
      while (!ended && Date.now() < deadline && !c.isDone()) {
        await sleep(20);
        tail.poll();
        ended = tail.lines.slice(seen).find((l) => l.ev === 'end' && l.ok && l.wf === wf);
      }
      if (!ended) return null;
      state = `${Date.now() - ended.t} ms after ${ended.type} completed`;
    } else {
      await sleep(u * 3000);
    }
    const rec = base(state);
    await c.killWorker('orchestration', signal);
    await sleep(restartDelayMs);
    const began = Date.now();
    c.start('orchestration');
    await waitProgress(c, began);
    rec.recoveryMs = Date.now() - began;
    return rec;
  }

  const kind: WorkerKind = target === 'proposer' ? 'proposer' : 'model';
  let victim = running(tail.lines, pid(kind), wf);
  if (!victim) return null;
  if (target === 'model-checkpoint') {
    // Kill as a file appears in the object store while the step runs: a checkpoint (or result) mid-write.
    const hit = await tmpFileDuring(c, path.join(cluster.dir, 'artifacts', 'objects'), victim, pid(kind));
    if (!hit) return null;
    tail.poll();
    victim = running(tail.lines, pid(kind), wf);
    if (!victim) return null;
    const rec = base(`${describeAttempt(victim)}, writing ${hit}`);
    await c.killWorker(kind, signal);
    return finishWorkerKill(c, rec, kind, victim);
  }
  // A seeded moment inside the state: up to 0.3 s into a proposer activity, 1 s into a fine-tune step, 2 s into
  // rollouts and evaluations; but never later than the state is likely to last: within 80 % of what is left of
  // the median duration of the same activity type so far in this run (on a quiet machine proposer activities
  // and harness evaluations take well under the fixed caps, and a later moment would always miss them).
  const cap = target === 'proposer' ? 300 : target === 'model-finetune' ? 1000 : 2000;
  const past = attemptsOf(tail.lines.filter((l) => l.wf === wf)).filter((a) => a.type === victim!.type && a.end !== null).map((a) => a.end! - a.start).sort((x, y) => x - y);
  const left = past.length ? past[Math.floor(past.length / 2)] - (Date.now() - victim.start) : cap;
  const wait = u * Math.min(cap, Math.max(0, 0.8 * left));
  await sleep(wait);
  tail.poll();
  const still = running(tail.lines, pid(kind), wf);
  if (!still || still.key !== victim.key) return null;
  const rec = base(describeAttempt(still));
  await c.killWorker(kind, signal);
  return finishWorkerKill(c, rec, kind, still);
}

async function finishWorkerKill(c: InjectContext, rec: KillRecord, kind: WorkerKind, victim: Attempt): Promise<KillRecord> {
  rec.victimAid = victim.aid;
  await sleep(rec.restartDelayMs);
  const began = Date.now();
  c.start(kind);
  // Recovered: the interrupted activity runs again (a new attempt starts) or finished, or the run ended.
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    c.tail.poll();
    const mine = c.tail.lines.filter((l) => l.wf === c.wf && `${l.run}|${l.aid}` === victim.aid);
    // A new attempt started, or the activity completed anyway (a SIGTERMed worker finishing within its grace).
    if (mine.some((l) => (l.t >= began && l.ev === 'start') || (l.ev === 'end' && l.ok)) || c.isDone()) break;
    if (Date.now() > deadline) {
      rec.note = 'the interrupted activity did not start again within 10 min';
      break;
    }
    await sleep(200);
  }
  rec.recoveryMs = Date.now() - began;
  return rec;
}

/** After a restart: progress shows as any new journal line of the run (or the run's end). */
async function waitProgress(c: InjectContext, since: number): Promise<void> {
  const deadline = Date.now() + 10 * 60_000;
  while (!c.isDone() && Date.now() < deadline) {
    c.tail.poll();
    if (c.tail.lines.some((l) => l.t > since && l.wf === c.wf)) return;
    await sleep(200);
  }
}

/** Waits for a temp file to appear in the object store while `victim` still runs; resolves its name or null. */
async function tmpFileDuring(c: InjectContext, dir: string, victim: Attempt, pid: number | undefined): Promise<string | null> {
  mkdirSync(dir, { recursive: true });
  let hit: string | null = null;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, { recursive: true }, (_ev, name) => {
      const f = name ? String(name) : '';
      // A temp file, or a new prefix folder (the watcher may attach to it only after the temp file inside
      // it was created): a write has started. A plain object name is a finished rename and does not count.
      if (!hit && (f.endsWith('.tmp') || (f !== '' && !f.includes('/')))) hit = f;
    });
    const deadline = Date.now() + 60_000;
    while (!hit && Date.now() < deadline && !c.isDone()) {
      await sleep(5);
      c.tail.poll();
      const still = running(c.tail.lines, pid, c.wf);
      if (!still || still.key !== victim.key) return null;
    }
    return hit;
  } finally {
    watcher?.close();
  }
}

// --------------------------------------------------------------------------------------------- analysis

/** Work executed more than once, over the whole run: what each kill must explain. */
function redoneUnits(attempts: Attempt[]): { rollouts: number; minibatches: number } {
  let rollouts = 0;
  let minibatches = 0;
  for (const [, group] of groupBy(attempts, (a) => a.aid)) {
    if (group[0].type === 'fineTuneStep') {
      const count = new Map<number, number>();
      for (const a of group) for (let m = a.resumeMinibatch + 1; m <= unitsDone(a); m++) count.set(m, (count.get(m) ?? 0) + 1);
      for (const v of count.values()) minibatches += v - 1;
    } else if (ROLLOUT_TYPES.has(group[0].type)) {
      // A rollout attempt that did not complete is thrown away whole: its finished rollouts run again.
      for (const a of group) if (a.ok !== true) rollouts += unitsDone(a);
    }
  }
  return { rollouts, minibatches };
}

function groupBy<T>(xs: T[], key: (x: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const x of xs) m.set(key(x), [...(m.get(key(x)) ?? []), x]);
  return m;
}

/**
 * Per kill: the attempts in flight on the killed process (every process for a server kill) that did not
 * complete, the units they finished that a later attempt ran again, and the wall time of that redone work,
 * against the bound: one heartbeat interval plus the unit that was interrupted.
 */
function attributeLostWork(kills: KillRecord[], attempts: Attempt[], pidKind: Map<number, WorkerKind>, hbIntervalS: number): void {
  const byAid = groupBy(attempts, (a) => a.aid);
  const claimed = new Set<string>();
  for (const k of kills) {
    const killedKinds: WorkerKind[] | 'all' = k.target === 'server' ? 'all'
      : k.target.startsWith('model') ? ['model'] : k.target === 'proposer' ? ['proposer'] : ['orchestration'];
    const hits = attempts.filter((a) => !claimed.has(a.key) && a.ok !== true && a.start <= k.atEpochMs && (a.end === null || a.end >= k.atEpochMs - 50)
      && (killedKinds === 'all' || killedKinds.includes(pidKind.get(a.pid) ?? 'orchestration')));
    const notes: string[] = [];
    let worstRedoneS = 0;
    let worstBound = hbIntervalS;
    for (const a of hits) {
      claimed.add(a.key);
      const later = (byAid.get(a.aid) ?? []).filter((b) => b.start > a.start).sort((x, y) => x.start - y.start)[0];
      const beatsBefore = a.beats.filter((b) => b.t <= k.atEpochMs);
      const doneAtKill = beatsBefore.length ? Math.max(...beatsBefore.map((b) => b.done)) : 0;
      const gaps = a.beats.slice(1).map((b, i) => b.t - a.beats[i].t);
      const unitS = median(gaps) / 1000;
      let redone = 0;
      let redoneS = 0;
      if (a.type === 'fineTuneStep') {
        const resumeAt = later ? later.resumeMinibatch : doneAtKill;
        redone = Math.max(0, doneAtKill - Math.max(resumeAt, a.resumeMinibatch));
        k.redoneMinibatches += redone;
        if (redone > 0) {
          const from = a.beats.find((b) => b.done === Math.max(resumeAt, a.resumeMinibatch))?.t ?? a.start;
          const to = beatsBefore.find((b) => b.done === doneAtKill)?.t ?? from;
          redoneS = (to - from) / 1000;
        }
        notes.push(`${a.type}: trained to minibatch ${doneAtKill}, next attempt resumed at ${later ? later.resumeMinibatch : '-'}`);
      } else if (ROLLOUT_TYPES.has(a.type)) {
        redone = doneAtKill;
        k.redoneRollouts += redone;
        // The batch restarts whole: everything since the attempt started is redone, the current turn included.
        const lastBeat = beatsBefore.length ? beatsBefore[beatsBefore.length - 1].t : a.start;
        redoneS = (lastBeat - a.start) / 1000;
        notes.push(`${a.type}: ${doneAtKill} rollouts finished in the killed attempt`);
      } else {
        notes.push(`${a.type} attempt ${a.attempt} ${a.end === null ? 'killed' : 'failed'}`);
      }
      worstRedoneS = Math.max(worstRedoneS, redoneS);
      worstBound = Math.max(worstBound, hbIntervalS + unitS);
    }
    k.redoneSeconds = Math.round(worstRedoneS * 10) / 10;
    k.boundSeconds = Math.round(worstBound * 10) / 10;
    k.withinBound = worstRedoneS <= worstBound + 0.5;
    if (notes.length) k.note = [k.note, ...notes].filter(Boolean).join('; ');
  }
}

async function historyFacts(cluster: FaultCluster, workflowId: string): Promise<SoakReport['history']> {
  const activityRetries: Record<string, number> = {};
  let workflowTaskTimeouts = 0;
  let workflowTaskFailures = 0;
  for await (const w of cluster.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await cluster.client.workflow.getHandle(workflowId, w.runId).fetchHistory();
    const scheduled = new Map<string, string>();
    for (const e of history.events ?? []) {
      const s = e.activityTaskScheduledEventAttributes;
      if (s) scheduled.set(String(e.eventId), s.activityType?.name ?? '?');
      const st = e.activityTaskStartedEventAttributes;
      if (st) {
        const type = scheduled.get(String(st.scheduledEventId)) ?? '?';
        activityRetries[type] = (activityRetries[type] ?? 0) + Math.max(0, (st.attempt ?? 1) - 1);
      }
      if (e.workflowTaskTimedOutEventAttributes) workflowTaskTimeouts++;
      if (e.workflowTaskFailedEventAttributes) workflowTaskFailures++;
    }
  }
  return { activityRetries, workflowTaskTimeouts, workflowTaskFailures };
}

/** Every object in the store must hash to its name; temp files left by killed writers are counted (readers never see them). */
export function storeIntegrity(root: string): SoakReport['store'] {
  const objects = path.join(root, 'objects');
  let count = 0;
  let orphanTmp = 0;
  const corrupt: string[] = [];
  if (!existsSync(objects)) return { objects: 0, corrupt, orphanTmp };
  for (const d of readdirSync(objects)) {
    for (const f of readdirSync(path.join(objects, d))) {
      if (f.endsWith('.tmp')) {
        orphanTmp++;
        continue;
      }
      count++;
      if (sha256Hex(readFileSync(path.join(objects, d, f))) !== d + f) corrupt.push(d + f);
    }
  }
  return { objects: count, corrupt, orphanTmp };
}

function compare(ref: RunOutcome, got: RunOutcome): SoakReport['comparisons'] {
  const short = (v: unknown) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    return s.length > 40 ? `${createHash('sha256').update(s).digest('hex').slice(0, 12)} (${s.length} chars)` : s;
  };
  const row = (name: string, a: unknown, b: unknown) => ({ name, reference: short(a), killed: short(b), equal: JSON.stringify(a) === JSON.stringify(b) });
  const r = ref.summary;
  const g = got.summary;
  return [
    row('status', ref.status, got.status),
    row('decisions (phase switches, rules)', ref.decisions, got.decisions),
    row('accepted harnesses', ref.decisions.map((d) => (d as { acceptedHarness: unknown }).acceptedHarness), got.decisions.map((d) => (d as { acceptedHarness: unknown }).acceptedHarness)),
    row('final harness sha256', r?.finalHarness.sha256.slice(0, 16), g?.finalHarness.sha256.slice(0, 16)),
    row('final checkpoint sha256', r?.finalCheckpoint.sha256.slice(0, 16), g?.finalCheckpoint.sha256.slice(0, 16)),
    row('checkpoint after each step', ref.stepCheckpoints, got.stepCheckpoints),
    row('test scores (mean@k)', ref.testScores, got.testScores),
    row('weight steps, proposal rounds', [r?.weightStepsDone, r?.proposalRoundsDone], [g?.weightStepsDone, g?.proposalRoundsDone]),
    row('rollout ledger', r?.ledger, g?.ledger),
  ];
}
