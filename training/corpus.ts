// The pretraining corpus: demonstrations played by a domain's TeacherBackend through the real agent loop
// (runEpisodes) under a mix of trusted harnesses, on D_weight tasks only (teachers read the hidden
// reference; demonstrations on D_harness or D_test would leak it into the weights). One training example
// per model call, exactly as RSFT builds them: prompt tokens weight 0, generated tokens weight 1.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEpisodes, type RolloutSampling } from '../agent/loop';
import { trainingExamplesFromTrajectories, type TrainingExample, type Trajectory } from '../agent/trajectory';
import { readSeedHarness } from '../domains/harnesses';
import { readReferenceHarness } from '../domains/reference-harnesses';
import type { BuiltinDomainName } from '../domains/registry';
import { createTeacher, TeacherBackend } from '../domains/teachers';
import type { DomainInstance, EnvTask } from '../domains/types';
import { loadHarnessInProcess } from '../harness-sandbox/in-process';
import { ROLLOUT_LIMITS } from './rollout-limits';

export { ROLLOUT_LIMITS };

/** One harness of the pretraining mix: its source and how many demonstrations per D_weight task. */
export interface CorpusHarness {
  label: string;
  source: string;
  samplesPerTask: number;
}

const VARIANT_FILES: Readonly<Record<BuiltinDomainName, string>> = {
  math: 'math-asked.ts',
  'search-qa': 'search-qa-asked.ts',
  chess: 'chess-listed.ts',
};

export function readPromptVariant(domain: BuiltinDomainName): string {
  return readFileSync(join(__dirname, 'harness-variants', VARIANT_FILES[domain]), 'utf8');
}

/**
 * The default mix: mostly h0 (the format every run starts from), plus the reference harness and one prompt
 * variant so the base policy's choices depend on the prompt the way the teacher's do.
 */
export function defaultHarnessMix(domain: BuiltinDomainName, scale = 1): CorpusHarness[] {
  return [
    { label: 'h0', source: readSeedHarness(domain), samplesPerTask: 2 * scale },
    { label: 'reference', source: readReferenceHarness(domain), samplesPerTask: scale },
    { label: 'variant', source: readPromptVariant(domain), samplesPerTask: scale },
  ];
}

/** Parses a mix like `h0:4,variant:1,reference:0` (entries with 0 samples are left out). */
export function parseHarnessMix(domain: BuiltinDomainName, spec: string): CorpusHarness[] {
  const sources: Record<string, () => string> = { h0: () => readSeedHarness(domain), reference: () => readReferenceHarness(domain), variant: () => readPromptVariant(domain) };
  const out: CorpusHarness[] = [];
  for (const part of spec.split(',')) {
    const [label, count] = part.split(':');
    const read = sources[label];
    const n = Number(count);
    if (!read || !Number.isInteger(n) || n < 0) throw new Error(`bad harness mix entry ${JSON.stringify(part)}: use label:count with label in h0, reference, variant`);
    if (n > 0) out.push({ label, source: read(), samplesPerTask: n });
  }
  if (out.length === 0) throw new Error(`harness mix ${JSON.stringify(spec)} has no demonstrations`);
  return out;
}

export interface BuildCorpusInput {
  domain: BuiltinDomainName;
  instance: DomainInstance;
  harnesses: readonly CorpusHarness[];
  seed: number;
  /** Model context: every example must fit. */
  contextLength: number;
  /** At most this many D_weight tasks (the first ones); all by default. */
  maxTasks?: number;
}

export interface CorpusHarnessStats {
  label: string;
  episodes: number;
  teacherSuccess: number;
  examples: number;
}

export interface PretrainCorpus {
  examples: TrainingExample[];
  trajectories: Trajectory[];
  stats: { episodes: number; examples: number; tokens: number; weightedTokens: number; maxExampleTokens: number; perHarness: CorpusHarnessStats[] };
}

function isPrefix(a: readonly number[], b: readonly number[]): boolean {
  if (a.length > b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Folds a model call's example into the next call of the same episode when the next prompt starts with
 * it (an append-only transcript): one row then carries both calls' generated tokens (weight 1) over the
 * same contexts, so the loss terms are the ones the separate examples give, at about half the compute.
 * Calls after a context rewrite stay separate rows.
 */
export function mergePrefixExamples(examples: readonly TrainingExample[]): TrainingExample[] {
  const out: TrainingExample[] = [];
  for (const e of examples) {
    const prev = out[out.length - 1];
    if (prev && prev.trajectoryId === e.trajectoryId && isPrefix(prev.tokens, e.tokens)) {
      out[out.length - 1] = { ...e, weights: [...prev.weights, ...e.weights.slice(prev.weights.length)] };
    } else out.push(e);
  }
  return out;
}

/** Plays the teacher under each harness of the mix over D_weight and collects every model call as an example. */
export async function buildPretrainCorpus(input: BuildCorpusInput): Promise<PretrainCorpus> {
  const tasks: EnvTask<unknown>[] = input.instance.splits.weight.slice(0, input.maxTasks ?? Infinity);
  const policy = createTeacher(input.domain, input.instance);
  const sampling: RolloutSampling = { temperature: 1, topK: 20, topP: 1, ...ROLLOUT_LIMITS };
  const trajectories: Trajectory[] = [];
  const perHarness: CorpusHarnessStats[] = [];
  for (const [index, h] of input.harnesses.entries()) {
    const loaded = loadHarnessInProcess(h.source);
    if (!loaded.ok) throw new Error(`pretraining harness ${h.label} is invalid: ${loaded.violations.map((v) => `${v.where}: ${v.message}`).join('; ')}`);
    const rollout = { runSeed: input.seed, step: index, samplesPerTask: h.samplesPerTask, maxTurns: loaded.runner.manifest.config.maxTurns };
    const backend = new TeacherBackend(tasks, policy, rollout, input.contextLength);
    const r = await runEpisodes({ backend, environment: input.instance.environment, harness: loaded.runner, tasks, samplesPerTask: h.samplesPerTask, sampling, runSeed: rollout.runSeed, step: rollout.step });
    // A later turn may run out of context (the loop ends that episode, its earlier calls still train); a first
    // prompt that does not fit means the preset cannot hold this domain at all.
    const failed = r.trajectories.find((t) => t.harnessFailure !== null || t.modelCalls.length === 0);
    if (failed) {
      const why = failed.stopReason === 'context-full' ? `an episode does not fit the model context ${input.contextLength} (${failed.stopDetail}): use a preset with a longer context` : failed.stopDetail;
      throw new Error(`pretraining harness ${h.label}: ${why}`);
    }
    trajectories.push(...r.trajectories);
    perHarness.push({
      label: h.label,
      episodes: r.trajectories.length,
      teacherSuccess: r.trajectories.filter((t) => t.reward === 1).length / Math.max(1, r.trajectories.length),
      examples: r.trajectories.reduce((n, t) => n + t.modelCalls.length, 0),
    });
  }
  // Every demonstration trains, right or wrong: the base policy imitates the teacher's choices, errors included
  // (dropped calls too, so the corpus and the committed base policies stay what they were).
  const examples = mergePrefixExamples(trainingExamplesFromTrajectories(trajectories, { minReward: -1, includeDropped: true }));
  let tokens = 0;
  let weightedTokens = 0;
  let maxExampleTokens = 0;
  for (const e of examples) {
    tokens += e.tokens.length;
    weightedTokens += e.weights.reduce((a, w) => a + w, 0);
    maxExampleTokens = Math.max(maxExampleTokens, e.tokens.length);
  }
  if (maxExampleTokens > input.contextLength) throw new Error(`a demonstration has ${maxExampleTokens} tokens, more than the model context ${input.contextLength}: use a preset with a longer context`);
  return { examples, trajectories, stats: { episodes: trajectories.length, examples: examples.length, tokens, weightedTokens, maxExampleTokens, perHarness } };
}
