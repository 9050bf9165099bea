// `whale bench runtime`: in one run, (a) the project trainer's throughput on the base-policy config
// (embedded-1m, 32 x 128 tokens, one AdamW step) against onnxruntime-node's MatMul rate on the same block
// shapes, threads and process (the measurements of scripts/bench-runtime.ts, reused); (b) the trainer and
// the KV-cache sampler (at batch 32 and at the demo preset's rollout batch) against PyTorch on CPU on the
// same architecture, shapes and thread count (scripts/bench/torch_gpt.py; skipped with a message when torch
// is not installed); (c) the orchestration
// overhead of Temporal on a sequential run: the share of the run's wall time (workflow start to close) not
// inside an activity execution (ActivityTaskStarted to its close event), from the run's own history; (d) where
// a real rollout batch's time goes (bench/rollout-breakdown.ts).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { modelConfig, type PresetName } from '../model/config';
import { FLOP_NOTE, generationTokensPerSec, runTrainInChild, type TrainMeasure } from '../scripts/bench-runtime';
import { PROJECT_ROOT } from '../cli/paths';
import { readHistoryFiles } from '../audit/timeline';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { writeFileAtomic } from '../store/artifact-store';
import { fetchLatestChain } from './compare';
import { formatRolloutBreakdown, rolloutBreakdown, type RolloutBreakdown } from './rollout-breakdown';
import { formatTrainerProfile, profileTrainer, type TrainerProfile } from './trainer-profile';
import { OrtSampler } from '../model/sampling/sampler';
import { initParams } from '../model/checkpoints/init-params';
import { Xoshiro128 } from '../common/xoshiro';
import type { GenerateRequest } from '../model/backend';

type History = temporal.api.history.v1.IHistory;

export const TORCH_INSTALL = 'python3 -m venv .tools/torch-venv && .tools/torch-venv/bin/pip install torch';
export const DEFAULT_OVERHEAD_HISTORY = path.join('tests', 'histories', 'v1', 'demo.json');
const PRESET: PresetName = 'embedded-1m';
const ROWS = 32;
const SEQ = 128;
const GEN = { batch: 32, promptLen: 64, newTokens: 128, topK: 20 };
/** The model worker's sampler decodes at most this many rows at once (workers/model.ts). */
const WORKER_BATCH_ROWS = 256;

export interface OverheadMeasure {
  source: string;
  wallSeconds: number;
  /** Union of activity execution intervals (started to closed). */
  activitySeconds: number;
  /** Sum of scheduled-to-started waits (part of the overhead). */
  scheduleToStartSeconds: number;
  activities: number;
  /** Most activities executing at once (1 = a sequential run). */
  maxConcurrent: number;
  overheadFraction: number;
}

const eventMs = (t: unknown): number => {
  const x = t as { seconds?: unknown; nanos?: number | null } | null | undefined;
  return x ? Number(x.seconds ?? 0) * 1000 + (x.nanos ?? 0) / 1e6 : NaN;
};

/**
 * Orchestration overhead of a run (every history of its continue-as-new chain, oldest first): 1 - (time
 * inside activity executions) / (first workflow start to last close). A retried attempt's time counts as
 * overhead (the history records only the last attempt's start).
 */
export function orchestrationOverhead(histories: History[], source: string): OverheadMeasure {
  const intervals: [number, number][] = [];
  let scheduleToStart = 0;
  let first = NaN;
  let last = NaN;
  let closed = false;
  for (const h of histories) {
    const scheduled = new Map<string, number>();
    const started = new Map<string, number>();
    for (const e of h.events ?? []) {
      const t = eventMs(e.eventTime);
      if (Number.isNaN(first)) first = t;
      last = t;
      if (e.activityTaskScheduledEventAttributes) scheduled.set(String(e.eventId), t);
      const st = e.activityTaskStartedEventAttributes;
      if (st) {
        started.set(String(st.scheduledEventId), t);
        const s = scheduled.get(String(st.scheduledEventId));
        if (s !== undefined) scheduleToStart += t - s;
      }
      const end = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCanceledEventAttributes;
      if (end) {
        const s = started.get(String(end.scheduledEventId));
        if (s !== undefined) intervals.push([s, t]);
      }
      if (e.workflowExecutionCompletedEventAttributes || e.workflowExecutionFailedEventAttributes) closed = true;
    }
  }
  if (!closed) throw new Error(`${source}: the run has not completed (no close event in its last history); give a finished run`);
  if (intervals.length === 0) throw new Error(`${source}: no activity executions in the history`);
  intervals.sort((a, b) => a[0] - b[0]);
  let union = 0;
  let curStart = intervals[0][0];
  let curEnd = intervals[0][1];
  for (const [s, e] of intervals.slice(1)) {
    if (s > curEnd) {
      union += curEnd - curStart;
      curStart = s;
      curEnd = e;
    } else curEnd = Math.max(curEnd, e);
  }
  union += curEnd - curStart;
  const points = intervals.flatMap(([s, e]) => [[s, 1], [e, -1]] as [number, number][]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let live = 0;
  let maxConcurrent = 0;
  for (const [, d] of points) maxConcurrent = Math.max(maxConcurrent, (live += d));
  const wall = last - first;
  return {
    source, wallSeconds: wall / 1000, activitySeconds: union / 1000, scheduleToStartSeconds: scheduleToStart / 1000,
    activities: intervals.length, maxConcurrent, overheadFraction: 1 - union / wall,
  };
}

export interface TorchMeasure {
  torch: string;
  threads: number;
  params: number;
  train: { medianMs: number; bestMs: number; tokensPerSec: number; bestTokensPerSec: number };
  generate: { median: number; best: number };
  /** Generation at the demo preset's rollout batch (distinct prompts x samples); null when not asked for. */
  rollout: { median: number; best: number } | null;
}

/** The demo preset's rollout batch: distinct prompts per weight step and samples of each. */
export function demoRolloutShape(): { prompts: number; samplesPerPrompt: number } {
  const demo = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'presets', 'demo.json'), 'utf8')) as { weight: { promptsPerStep: number; samplesPerPrompt: number } };
  return { prompts: demo.weight.promptsPerStep, samplesPerPrompt: demo.weight.samplesPerPrompt };
}

/**
 * Embedded-sampler generation at a rollout batch's shape: `prompts` distinct random prompts of GEN.promptLen
 * tokens, `samplesPerPrompt` rows each (own seeds; the rows of a prompt share its prefill, as in a rollout
 * step), GEN.newTokens new tokens per row, top-k GEN.topK, decoded in waves of the model worker's size.
 */
export async function rolloutGenerationTokensPerSec(threads: number, shape: { prompts: number; samplesPerPrompt: number; newTokens?: number }, reps: number): Promise<{ median: number; best: number; rows: number }> {
  const c = modelConfig(PRESET);
  const sampler = await OrtSampler.create(c, initParams(c, 1), { threads, maxBatchRows: WORKER_BATCH_ROWS });
  try {
    const rng = new Xoshiro128(3);
    const prompts = Array.from({ length: shape.prompts }, () => Array.from({ length: GEN.promptLen }, () => rng.nextU32() % 256));
    const reqs: GenerateRequest[] = prompts.flatMap((promptTokens, p) => Array.from({ length: shape.samplesPerPrompt }, (_, s) => ({
      promptTokens, maxNewTokens: shape.newTokens ?? GEN.newTokens, temperature: 1, topK: GEN.topK, topP: 1, stopTokens: [], seed: p * shape.samplesPerPrompt + s,
    })));
    await sampler.generate(reqs.slice(0, 1));
    const rates: number[] = [];
    for (let r = 0; r < reps; r++) {
      const t0 = performance.now();
      const out = await sampler.generate(reqs);
      rates.push((out.reduce((a, x) => a + x.tokens.length, 0) / (performance.now() - t0)) * 1000);
    }
    rates.sort((a, b) => a - b);
    return { median: rates[Math.floor(rates.length / 2)], best: rates[rates.length - 1], rows: reqs.length };
  } finally {
    await sampler.close();
  }
}

/** Runs scripts/bench/torch_gpt.py; returns null (with the reason) when python or torch is missing. */
export function runTorch(python: string, threads: number, steps: number, genReps: number, rollout?: { prompts: number; samplesPerPrompt: number; reps: number }): { result: TorchMeasure | null; reason: string | null } {
  const py = path.resolve(PROJECT_ROOT, python);
  if (!existsSync(py)) return { result: null, reason: `no python at ${python}; install PyTorch with: ${TORCH_INSTALL} (or pass --python <path to a python with torch>)` };
  const probe = spawnSync(py, ['-c', 'import torch'], { encoding: 'utf8' });
  if (probe.status !== 0) return { result: null, reason: `${python} cannot import torch; install it with: ${TORCH_INSTALL}` };
  const c = modelConfig(PRESET);
  const r = spawnSync(py, [
    path.join(PROJECT_ROOT, 'scripts', 'bench', 'torch_gpt.py'), '--config', JSON.stringify(c), '--threads', String(threads),
    '--rows', String(ROWS), '--seq', String(SEQ), '--steps', String(steps), '--gen-batch', String(GEN.batch),
    '--prompt-len', String(GEN.promptLen), '--new-tokens', String(GEN.newTokens), '--top-k', String(GEN.topK), '--gen-reps', String(genReps),
    ...(rollout ? ['--rollout-prompts', String(rollout.prompts), '--rollout-samples', String(rollout.samplesPerPrompt), '--rollout-reps', String(rollout.reps)] : []),
  ], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`the PyTorch benchmark failed (exit ${r.status}): ${r.stderr.slice(-2000)}`);
  return { result: JSON.parse(line.slice(7)) as TorchMeasure, reason: null };
}

export interface RuntimeBenchOptions {
  threads: number;
  steps: number;
  quick: boolean;
  python: string;
  history?: string;
  workflowId?: string;
  out?: string;
  command: string;
  /** Also profile the trainer's graph per node (bench/trainer-profile.ts): a few seconds more. */
  profile?: boolean;
}

export interface RuntimeBenchReport {
  command: string;
  date: string;
  machine: { cpus: number; loadAvgStart: number[]; loadAvgEnd: number[] };
  preset: string;
  threads: number;
  train: TrainMeasure & { ratioToMatmul: number };
  /** Deterministic mode at the same threads, at the preset shape and at long rows (with its non-deterministic pair). */
  deterministic: Array<{ rows: number; seqLen: number; nonDeterministic: TrainMeasure; deterministic: TrainMeasure; ratio: number }>;
  generate: { median: number; best: number };
  /** Generation at the demo preset's rollout batch (prompts x samples rows, waves of the model worker's size). */
  generateRollout: { prompts: number; samplesPerPrompt: number; median: number; best: number };
  torch: (TorchMeasure & { trainRatio: number; generateRatio: number; rolloutGenerateRatio: number | null }) | null;
  torchSkipped: string | null;
  overhead: OverheadMeasure;
  /** A rollout batch of the demo preset's size (math) under h0 and the frozen accepted demo harness, by part. */
  rollouts: RolloutBreakdown[];
  /** With --profile: where the step's graph time goes, by op group and forward / backward. */
  trainerProfile?: TrainerProfile;
  /** generateVsTorch: generation at least 1.5 x PyTorch at batch GEN.batch and at the rollout batch. */
  targets: { trainVsMatmul: boolean; trainVsTorch: boolean | null; overhead: boolean; generateVsTorch: boolean | null };
}

async function overheadFrom(o: RuntimeBenchOptions): Promise<OverheadMeasure> {
  if (o.workflowId) {
    const client = await connectClient(loadTemporalConfig());
    return orchestrationOverhead(await fetchLatestChain(client, o.workflowId), `workflow ${o.workflowId}`);
  }
  const file = o.history ?? path.join(PROJECT_ROOT, DEFAULT_OVERHEAD_HISTORY);
  return orchestrationOverhead(readHistoryFiles([file]), path.relative(process.cwd(), file) || file);
}

export async function runRuntimeBench(o: RuntimeBenchOptions, write: (s: string) => void = (s) => process.stdout.write(s + '\n')): Promise<RuntimeBenchReport> {
  const load = () => os.loadavg().slice(0, 2).map((x) => Number(x.toFixed(2)));
  const loadStart = load();
  // The overhead needs no CPU and fails fast on a bad history or id: first.
  const overhead = await overheadFrom(o);
  write(`# whale bench runtime  ${new Date().toISOString()}  cpus ${os.cpus().length}  threads ${o.threads}  load avg (1/5 min) at start ${loadStart.join(' / ')}`);
  write(`# ${o.command}`);
  write(`\n## (a) trainer on ${PRESET}, ${ROWS}x${SEQ} tokens, one forward + backward + clip + AdamW step, vs onnxruntime MatMul\n# ${FLOP_NOTE}`);
  const train = runTrainInChild(PRESET, ROWS, SEQ, o.threads, o.quick ? 3 : o.steps, true);
  const ratioToMatmul = train.gflops / train.matmulGflops;
  write(`trainer: median ${train.medianMs.toFixed(0)} ms/step = ${train.tokensPerSec.toFixed(0)} tok/s = ${train.gflops.toFixed(1)} GFLOP/s (best ${train.bestMs.toFixed(0)} ms = ${train.bestTokensPerSec.toFixed(0)} tok/s)`);
  write(`ORT MatMul on the block shapes (same threads, same process): ${train.matmulGflops.toFixed(1)} GFLOP/s -> ratio ${ratioToMatmul.toFixed(2)} (target >= 0.5)`);
  const ph = train.phases;
  write(`weight step breakdown (medians): packing ${ph.packMs.toFixed(1)} ms, forward + backward graphs ${ph.graphMs.toFixed(1)} ms, gradient combine + AdamW ${ph.optimizerMs.toFixed(1)} ms, worker transfer ${ph.transferMs.toFixed(1)} ms`);
  const trainerProfile = o.profile ? await profileTrainer({ preset: PRESET, rows: ROWS, seqLen: SEQ, threads: o.threads, runs: o.quick ? 3 : 5 }) : undefined;
  if (trainerProfile) for (const line of formatTrainerProfile(trainerProfile, { medianMs: train.medianMs, graphMs: ph.graphMs, matmulGflops: train.matmulGflops })) write(line);
  // Deterministic mode (weight.deterministic) at the same threads: the preset shape, and rows of 1024 tokens.
  const deterministic: RuntimeBenchReport['deterministic'] = [];
  for (const [rows, seqLen] of [[ROWS, SEQ], [4, 1024]] as const) {
    const nonDet = rows === ROWS && seqLen === SEQ ? train : runTrainInChild(PRESET, rows, seqLen, o.threads, o.quick ? 3 : o.steps, true);
    const det = runTrainInChild(PRESET, rows, seqLen, o.threads, o.quick ? 3 : o.steps, true, true);
    deterministic.push({ rows, seqLen, nonDeterministic: nonDet, deterministic: det, ratio: det.tokensPerSec / nonDet.tokensPerSec });
    write(`trainer ${rows}x${seqLen}: deterministic median ${det.tokensPerSec.toFixed(0)} tok/s (best ${det.bestTokensPerSec.toFixed(0)}), non-deterministic ${nonDet.tokensPerSec.toFixed(0)} (best ${nonDet.bestTokensPerSec.toFixed(0)}) -> ratio ${(det.tokensPerSec / nonDet.tokensPerSec).toFixed(2)} (target >= 0.9)`);
  }
  const genReps = o.quick ? 2 : 5;
  const generate = await generationTokensPerSec(PRESET, GEN.batch, GEN.promptLen, GEN.newTokens, o.threads, genReps);
  write(`sampler: batch ${GEN.batch}, prompt ${GEN.promptLen}, ${GEN.newTokens} new tokens per row, top-k ${GEN.topK}: median ${generate.median.toFixed(0)} tok/s (best ${generate.best.toFixed(0)})`);
  const shape = o.quick ? { prompts: 8, samplesPerPrompt: demoRolloutShape().samplesPerPrompt } : demoRolloutShape();
  const rolloutReps = o.quick ? 1 : 3;
  const rolloutGen = await rolloutGenerationTokensPerSec(o.threads, shape, rolloutReps);
  const generateRollout = { ...shape, median: rolloutGen.median, best: rolloutGen.best };
  write(`sampler: rollout batch ${shape.prompts} prompts x ${shape.samplesPerPrompt} samples = ${rolloutGen.rows} rows (waves of ${WORKER_BATCH_ROWS}), same prompt length, new tokens and top-k: median ${rolloutGen.median.toFixed(0)} tok/s (best ${rolloutGen.best.toFixed(0)})`);

  write(`\n## (b) PyTorch on CPU, same architecture, shapes and threads (scripts/bench/torch_gpt.py, eager, SDPA attention)`);
  const torch = runTorch(o.python, o.threads, o.quick ? 3 : o.steps, genReps, { ...shape, reps: rolloutReps });
  let torchReport: RuntimeBenchReport['torch'] = null;
  if (torch.result) {
    const t = torch.result;
    torchReport = { ...t, trainRatio: train.tokensPerSec / t.train.tokensPerSec, generateRatio: generate.median / t.generate.median, rolloutGenerateRatio: t.rollout ? rolloutGen.median / t.rollout.median : null };
    write(`torch ${t.torch}, ${t.threads} threads, ${t.params} params${t.params === train.params ? ' (same as the project model)' : ` (PROJECT MODEL HAS ${train.params}: the architectures differ)`}`);
    write(`torch training: median ${t.train.medianMs.toFixed(0)} ms/step = ${t.train.tokensPerSec.toFixed(0)} tok/s (best ${t.train.bestTokensPerSec.toFixed(0)}) -> project / torch ${torchReport.trainRatio.toFixed(2)} (target >= 1.0)`);
    write(`torch generation: median ${t.generate.median.toFixed(0)} tok/s (best ${t.generate.best.toFixed(0)}) -> project / torch ${torchReport.generateRatio.toFixed(2)} (target >= 1.5)`);
    if (t.rollout) write(`torch generation at the rollout batch (each prompt prefilled once, its K/V repeated per sample): median ${t.rollout.median.toFixed(0)} tok/s (best ${t.rollout.best.toFixed(0)}) -> project / torch ${(torchReport.rolloutGenerateRatio as number).toFixed(2)} (target >= 1.5)`);
  } else {
    write(`skipped: ${torch.reason}`);
  }

  write(`\n## (c) Temporal orchestration overhead (${overhead.source})`);
  write(`wall ${overhead.wallSeconds.toFixed(1)} s (workflow start to close), inside ${overhead.activities} activity executions ${overhead.activitySeconds.toFixed(1)} s, schedule-to-start waits ${overhead.scheduleToStartSeconds.toFixed(1)} s, at most ${overhead.maxConcurrent} activities at once${overhead.maxConcurrent > 1 ? ' (NOT a sequential run)' : ' (sequential)'}`);
  write(`overhead (wall time not inside an activity): ${(100 * overhead.overheadFraction).toFixed(2)} % (target <= 10 %)`);
  // The demo preset's rollout batch (--quick: 8 prompts, one timed batch per harness).
  const demo = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'presets', 'demo.json'), 'utf8')) as { weight: { promptsPerStep: number; samplesPerPrompt: number } };
  const batch = o.quick ? { prompts: 8, samplesPerPrompt: demo.weight.samplesPerPrompt, reps: 1 } : { prompts: demo.weight.promptsPerStep, samplesPerPrompt: demo.weight.samplesPerPrompt, reps: 3 };
  write(`\n## (d) a rollout batch (math, ${batch.prompts} prompts x ${batch.samplesPerPrompt} samples, the model worker's rolloutBatch activity, embedded sampler at ${o.threads} threads, base policy): median of ${batch.reps} batches per harness after a warm-up, interleaved`);
  const rollouts = await rolloutBreakdown({ threads: o.threads, ...batch });
  for (const line of formatRolloutBreakdown(rollouts)) write(line);
  const loadEnd = load();
  write(`\nload avg (1/5 min) at end ${loadEnd.join(' / ')}`);
  const report: RuntimeBenchReport = {
    command: o.command, date: new Date().toISOString(), machine: { cpus: os.cpus().length, loadAvgStart: loadStart, loadAvgEnd: loadEnd },
    preset: PRESET, threads: o.threads, train: { ...train, ratioToMatmul }, deterministic, generate, generateRollout, torch: torchReport, torchSkipped: torch.reason, overhead, rollouts,
    ...(trainerProfile ? { trainerProfile } : {}),
    targets: {
      trainVsMatmul: ratioToMatmul >= 0.5, trainVsTorch: torchReport ? torchReport.trainRatio >= 1 : null, overhead: overhead.overheadFraction <= 0.1,
      generateVsTorch: torchReport ? torchReport.generateRatio >= 1.5 && (torchReport.rolloutGenerateRatio ?? 0) >= 1.5 : null,
    },
  };
  if (o.out) {
    await writeFileAtomic(path.resolve(o.out), JSON.stringify(report, null, 2) + '\n');
    write(`wrote ${o.out}`);
  }
  return report;
}
