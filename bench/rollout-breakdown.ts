// `whale bench runtime`, part (d): where a real rollout batch's time goes. Runs the model worker's own
// rolloutBatch activity (embedded sampler, math base policy, harnesses in a real sandbox pool, the artifact
// store in a temporary folder) on the demo preset's batch, under h0 and under the frozen copy of an accepted
// demo harness (bench/fixtures/demo-accepted-harness.ts), and splits each batch's wall time by part.
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DirectoryArtifactStore } from '../store/artifact-store';
import { SandboxPool } from '../harness-sandbox/pool';
import { createEmbeddedSampler } from '../backends/embedded-sampler';
import { createHarnessLoader } from '../activities/harness-loader';
import { createModelActivities } from '../activities/model-activities';
import type { RolloutBatchInput, RolloutBatchResult } from '../activities/types';
import { ROLLOUT_LIMITS } from '../training/corpus';
import { basePolicyOf, createDomainCache, seedHarnessOf } from '../workers/domain-cache';
import type { RolloutTimings } from '../agent/loop';

export const DEMO_HARNESS_FIXTURE = path.join(__dirname, 'fixtures', 'demo-accepted-harness.ts');
/** The parts of a batch, in the order the table prints them. */
export const ROLLOUT_PARTS = ['samplingMs', 'sandboxMs', 'loopMs', 'envToolsMs', 'storageMs', 'tokenizeMs'] as const;
const PART_LABELS: Record<(typeof ROLLOUT_PARTS)[number], string> = {
  samplingMs: 'sampling (model generate)', sandboxMs: 'sandbox calls (harness hooks)', loopMs: 'agent loop (own work)',
  envToolsMs: 'environment tools + submit', storageMs: 'trajectory storage', tokenizeMs: 'tokenisation',
};

export interface RolloutBreakdown {
  harness: string;
  prompts: number;
  samplesPerPrompt: number;
  /** Median over the repetitions of each part (ms), and of the batch's total. */
  medianMs: RolloutTimings;
  /** Of the median batch's sandbox calls: time inside the sandbox process (the rest is IPC and JSON), ms. */
  sandboxInChildMs: number;
  reps: RolloutTimings[];
  rollouts: number;
  generatedTokens: number;
  meanTurns: number;
  meanReward: number | null;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * `reps` batches per harness, interleaved (h0, fixture, h0, ...) so that a change in the machine's load
 * falls on both. A small first batch per harness warms up (loads the sampler, the harness, the sandbox's
 * spare contexts) and is not counted.
 */
export async function rolloutBreakdown(o: { threads: number; prompts: number; samplesPerPrompt: number; reps: number }): Promise<RolloutBreakdown[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'whale-bench-rollouts-'));
  const store = new DirectoryArtifactStore(dir);
  // As the model worker builds them (workers/model.ts).
  const sampler = createEmbeddedSampler({ store, threads: o.threads, maxBatchRows: 256 });
  const sandbox = new SandboxPool({ processes: 1 });
  const harnesses = createHarnessLoader({ store, sandbox });
  const reported: RolloutTimings[] = [];
  const activities = createModelActivities({
    store, sampler, trainer: { fineTuneStep: () => Promise.reject(new Error('not used by the bench')) }, harnesses, limits: ROLLOUT_LIMITS,
    domain: createDomainCache(), basePolicy: basePolicyOf, seedHarness: seedHarnessOf, onRolloutTimings: (_label, t) => reported.push(t),
  });
  try {
    const checkpoint = await store.put('checkpoint', basePolicyOf('math'));
    const sources = [
      { name: 'h0 (math seed harness)', source: seedHarnessOf('math') },
      { name: 'demo accepted harness (bench/fixtures/demo-accepted-harness.ts)', source: readFileSync(DEMO_HARNESS_FIXTURE, 'utf8') },
    ];
    const refs = await Promise.all(sources.map((s) => store.put('harness', s.source)));
    const runs = sources.map((s) => ({ name: s.name, reps: [] as RolloutTimings[], inChild: [] as number[], last: null as null | { rollouts: number; tokens: number; meanTurns: number; meanReward: number | null } }));
    for (let rep = 0; rep <= o.reps; rep++) {
      for (let h = 0; h < sources.length; h++) {
        const input: RolloutBatchInput = {
          runId: 'bench-runtime', domain: 'math', step: 1, seed: 0, checkpoint, harness: refs[h], cursor: { epoch: 0, offset: 0 },
          // The warm-up batch is small: it only has to load the sampler and the harness.
          prompts: rep === 0 ? Math.min(o.prompts, 8) : o.prompts, samplesPerPrompt: o.samplesPerPrompt, sampling: { temperature: 1, topK: 20 }, acceptThreshold: 0.5,
        };
        const before = reported.length;
        const childBefore = sandbox.timing.childMs;
        const r = (await new MockActivityEnvironment().run(activities.rolloutBatch, input)) as RolloutBatchResult;
        if (reported.length !== before + 1) throw new Error('BUG: the rollout activity did not report its timings');
        if (rep === 0) continue;
        runs[h].reps.push(reported[before]);
        runs[h].inChild.push(sandbox.timing.childMs - childBefore);
        runs[h].last = { rollouts: r.rollouts, tokens: r.tokens, meanTurns: r.meanTurns, meanReward: r.meanReward };
      }
    }
    return runs.map((r) => {
      const medianMs = Object.fromEntries((['totalMs', ...ROLLOUT_PARTS] as const).map((k) => [k, median(r.reps.map((x) => x[k]))])) as unknown as RolloutTimings;
      return { harness: r.name, prompts: o.prompts, samplesPerPrompt: o.samplesPerPrompt, medianMs, sandboxInChildMs: median(r.inChild), reps: r.reps, rollouts: r.last!.rollouts, generatedTokens: r.last!.tokens, meanTurns: r.last!.meanTurns, meanReward: r.last!.meanReward };
    });
  } finally {
    await sampler.close();
    await harnesses.close();
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The breakdown as a table: one row per part, a column per harness (median ms and share of the batch). */
export function formatRolloutBreakdown(b: RolloutBreakdown[]): string[] {
  const cell = (r: RolloutBreakdown, k: keyof RolloutTimings) => `${r.medianMs[k].toFixed(0).padStart(7)} ms ${((100 * r.medianMs[k]) / r.medianMs.totalMs).toFixed(1).padStart(5)} %`;
  const lines = [`${'part'.padEnd(32)}${b.map((_, i) => `harness ${i + 1}`.padStart(18)).join('')}`];
  for (const k of ROLLOUT_PARTS) lines.push(`${PART_LABELS[k].padEnd(32)}${b.map((r) => cell(r, k).padStart(18)).join('')}`);
  lines.push(`${'batch total'.padEnd(32)}${b.map((r) => `${r.medianMs.totalMs.toFixed(0).padStart(7)} ms        `.padStart(18)).join('')}`);
  b.forEach((r, i) => lines.push(`harness ${i + 1}: ${r.harness}: ${r.rollouts} rollouts (${r.prompts} prompts x ${r.samplesPerPrompt}), ${r.generatedTokens} generated tokens, ${r.meanTurns.toFixed(2)} turns per rollout, mean reward ${r.meanReward?.toFixed(3) ?? 'none'}; median of ${r.reps.length} batches; sandbox calls ${r.medianMs.sandboxMs.toFixed(0)} ms of which ${r.sandboxInChildMs.toFixed(0)} ms inside the sandbox process (the rest IPC + JSON)`));
  return lines;
}
