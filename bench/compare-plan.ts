// The comparison's plan: domains, method tokens, run sizes, the run config of each (domain, method, seed) at
// a rollout budget, and its deterministic workflow id. Pure: no server, no files.
import type { TemporalConfig } from '../temporal.config';
import { sha256Hex } from '../store/artifact-store';
import { expandRunConfig } from '../workflows/run-config';

export const DOMAINS = ['math', 'search-qa', 'chess'] as const;

/** Method tokens: the plain methods, and `whale-fixed:E:I` for WHALE fixed at (E epochs, I rounds). */
export const DEFAULT_METHODS = ['weights-only', 'harness-only', 'stagewise', 'prompt-only', 'whale-fixed:0.1:3', 'whale-fixed:0.2:5', 'whale-adaptive'] as const;
const PLAIN_METHODS = ['weights-only', 'harness-only', 'stagewise', 'stagewise-harness-first', 'prompt-only', 'whale-adaptive'] as const;

/** Run sizes: `default` for the committed comparison, `tiny` to prove the machinery in seconds. */
export interface BenchSizes {
  promptsPerStep: number;
  samplesPerPrompt: number;
  minibatchSize: number;
  /** AdamW learning rate of every weight step (the run config's weight.learningRate). */
  learningRate: number;
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
  /**
   * Comparison protocol of every run (docs/method.md, "Comparison protocols"); absent: none, the runs the committed
   * comparison made (their configs and workflow ids stay as they were).
   */
  protocol?: 'equal';
  /** weight.minibatchUnit trajectories (the paper's unit, as the presets); absent: the version-1 default, calls. */
  minibatchUnit?: 'trajectories';
  /** weight.taskLimit: a seeded D_weight subset, so epochs fit the budget; absent: all of D_weight. */
  weightTaskLimit?: number;
  /** test.everyRollouts: the evaluation grid; absent: no grid. */
  testEveryRollouts?: number;
}

export const SIZES: Record<'default' | 'tiny' | 'three-epochs', BenchSizes> = {
  default: {
    promptsPerStep: 64, samplesPerPrompt: 8, minibatchSize: 64, learningRate: 1e-4, harnessTasks: 128, candidatesPerRound: 3,
    testTasks: 128, testSamplesPerTask: 8, testEveryEpochs: 0.1, promptOnlyEpochs: 0.1, promptOnlyRounds: 3,
    patienceEpochs: 0.05, harnessMinProposalRounds: 2, harnessPatienceRounds: 1, harnessMaxProposalRounds: 4,
  },
  tiny: {
    promptsPerStep: 4, samplesPerPrompt: 2, minibatchSize: 8, learningRate: 1e-4, harnessTasks: 4, candidatesPerRound: 1,
    testTasks: 4, testSamplesPerTask: 2, testEveryEpochs: 0.001, promptOnlyEpochs: 0.001, promptOnlyRounds: 2,
    patienceEpochs: 0.001, harnessMinProposalRounds: 1, harnessPatienceRounds: 1, harnessMaxProposalRounds: 2,
  },
  // presets/compare-3-epochs.json's sizes, with --budget 15360 (3 epochs of a 640-prompt D_weight) and the
  // paper's schedules: prompt-only at (0.6, 6), WHALE adaptive at W = B = P = 0.2 epoch and 5 / 2 / 15 rounds.
  'three-epochs': {
    promptsPerStep: 64, samplesPerPrompt: 8, minibatchSize: 64, learningRate: 1e-4, harnessTasks: 128, candidatesPerRound: 3,
    testTasks: 128, testSamplesPerTask: 8, testEveryEpochs: 0.5, promptOnlyEpochs: 0.6, promptOnlyRounds: 6,
    patienceEpochs: 0.2, harnessMinProposalRounds: 5, harnessPatienceRounds: 2, harnessMaxProposalRounds: 15,
    protocol: 'equal', minibatchUnit: 'trajectories', weightTaskLimit: 640, testEveryRollouts: 2560,
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
  /** Only rewrite results.json, results.md and the plots from the results folder; runs nothing. */
  report?: boolean;
}

export interface PlannedRun {
  domain: string;
  method: string;
  seed: number;
  workflowId: string;
  input: Record<string, unknown>;
}

/** Parses a method token; throws a message naming the accepted forms. */
export function parseMethod(token: string): { method: string; epochs?: number; rounds?: number; paper?: true } {
  // paper:<token>: the paper's protocol (weight steps budgeted, harness rollouts on top) for a method that trains weights.
  const paper = /^paper:(.+)$/.exec(token);
  if (paper) {
    const inner = parseMethod(paper[1]);
    if (inner.paper || !['weights-only', 'whale-fixed', 'whale-adaptive'].includes(inner.method)) {
      throw new Error(`unknown method '${token}': paper: takes weights-only, whale-adaptive or whale-fixed:E:I (the paper's protocol budgets weight steps)`);
    }
    return { ...inner, paper: true };
  }
  if ((PLAIN_METHODS as readonly string[]).includes(token)) return { method: token };
  const m = /^whale-fixed:(\d+(?:\.\d+)?):(\d+)$/.exec(token);
  if (m && Number(m[1]) > 0 && Number(m[2]) >= 1) return { method: 'whale-fixed', epochs: Number(m[1]), rounds: Number(m[2]) };
  throw new Error(`unknown method '${token}': use ${PLAIN_METHODS.join(', ')}, or whale-fixed:E:I (E epochs per weight phase > 0, I rounds per harness phase >= 1, e.g. whale-fixed:0.1:3), or paper:<one of weights-only, whale-adaptive, whale-fixed:E:I>`);
}

/**
 * The run config of one (domain, method, seed) at a budget of `budget` training + search rollouts.
 * Weight steps cost promptsPerStep x samplesPerPrompt rollouts, a harness round M x harnessTasks (round 0,
 * the re-scoring of the incoming harness, harnessTasks). Alternating methods stop at `maxRollouts` (after the
 * weight phase that reaches it); harness-only and stagewise get the number of steps / rounds that fits.
 */
export function benchRunConfig(token: string, domain: string, seed: number, budget: number, s: BenchSizes): Record<string, unknown> {
  const { method, epochs, rounds, paper } = parseMethod(token);
  const stepCost = s.promptsPerStep * s.samplesPerPrompt;
  const roundCost = s.harnessTasks * s.candidatesPerRound;
  const roundsFor = (rollouts: number) => Math.max(1, Math.floor((rollouts - s.harnessTasks) / roundCost));
  const base = {
    version: 1,
    name: `bench compare: ${token} on ${domain}, seed ${seed}, budget ${budget} rollouts`,
    domain, seed,
    weight: {
      promptsPerStep: s.promptsPerStep, samplesPerPrompt: s.samplesPerPrompt, minibatchSize: s.minibatchSize, learningRate: s.learningRate,
      ...(s.minibatchUnit !== undefined ? { minibatchUnit: s.minibatchUnit } : {}),
      ...(s.weightTaskLimit !== undefined ? { taskLimit: s.weightTaskLimit } : {}),
    },
    harness: { candidatesPerRound: s.candidatesPerRound, taskLimit: s.harnessTasks },
    test: { everyEpochs: s.testEveryEpochs, samplesPerTask: s.testSamplesPerTask, taskLimit: s.testTasks, ...(s.testEveryRollouts !== undefined ? { everyRollouts: s.testEveryRollouts } : {}) },
  };
  const allSteps = Math.max(1, Math.ceil(budget / stepCost));
  // Protocol paper: the same weight steps as weights-only at this budget, harness rollouts on top (no maxRollouts).
  if (paper) {
    const config = benchRunConfig(token.slice('paper:'.length), domain, seed, budget, { ...s, protocol: undefined }) as { budget: Record<string, unknown> };
    return { ...config, name: base.name, budget: { protocol: 'paper', totalWeightSteps: allSteps } };
  }
  // Protocol equal: every method spends at most `budget`; harness-only and a last harness stage propose until it is spent.
  if (s.protocol === 'equal') {
    const equal = { protocol: 'equal', maxRollouts: budget };
    const half = Math.max(1, Math.round(budget / 2 / stepCost));
    switch (method) {
      case 'harness-only':
        return { ...base, method, budget: { ...equal, totalWeightSteps: 0 } };
      case 'stagewise':
        return { ...base, method, stagewiseOrder: 'weights-first', budget: { ...equal, totalWeightSteps: half } };
      case 'stagewise-harness-first':
        return { ...base, method: 'stagewise', stagewiseOrder: 'harness-first', budget: { ...equal, totalWeightSteps: allSteps, harnessOnlyProposalRounds: roundsFor(budget / 2) } };
      default: {
        const config = benchRunConfig(token, domain, seed, budget, { ...s, protocol: undefined }) as { budget: Record<string, unknown> };
        return { ...config, budget: { ...config.budget, ...equal } };
      }
    }
  }
  switch (method) {
    case 'weights-only':
      return { ...base, method, budget: { totalWeightSteps: allSteps, maxRollouts: budget } };
    case 'harness-only':
      return { ...base, method, budget: { totalWeightSteps: 0, harnessOnlyProposalRounds: roundsFor(budget) } };
    case 'stagewise': {
      const steps = Math.max(1, Math.round(budget / 2 / stepCost));
      return { ...base, method, stagewiseOrder: 'weights-first', budget: { totalWeightSteps: steps, harnessOnlyProposalRounds: roundsFor(budget - steps * stepCost) } };
    }
    case 'stagewise-harness-first': {
      const rounds = roundsFor(budget / 2);
      const steps = Math.max(1, Math.round((budget - s.harnessTasks - rounds * roundCost) / stepCost));
      return { ...base, method: 'stagewise', stagewiseOrder: 'harness-first', budget: { totalWeightSteps: steps, harnessOnlyProposalRounds: rounds } };
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

