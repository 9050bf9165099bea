// The run configuration in two tiers: a small, versioned, partial input (JSON file or preset) that the
// workflow expands deterministically with that version's defaults into an explicit config it records.
// Workflow-safe: zod only. Changing a default here is a versioned change: add RunConfigV2, keep V1. A new
// field whose default is what the code did before stays in V1: recorded inputs and configs expand as they ran.
import { z } from 'zod';
import { ArtifactRef } from '../store/artifact-ref';

export const METHODS = ['whale-fixed', 'whale-adaptive', 'weights-only', 'harness-only', 'stagewise', 'prompt-only'] as const;
export const Method = z.enum(METHODS);
export type Method = z.infer<typeof Method>;

const Probability = z.number().min(0).max(1);
const PositiveInt = z.number().int().positive();
const Epochs = z.number().positive().max(1000);

export const FixedSwitching = z.strictObject({
  kind: z.literal('fixed').describe('Switching rule: a fixed schedule of E epochs per weight phase and I rounds per harness phase'),
  /** E: epochs of D_weight per weight phase (paper main runs: 0.6). */
  weightEpochs: Epochs.describe('E: length of each weight phase (paper main runs: 0.6; 0.2 was best in a sweep); rounded to whole steps, at least 1 (unit: epochs of D_weight)').default(0.6),
  /** I: rounds per harness phase, counting round 0 (the re-scoring of the incoming harness). */
  harnessRounds: PositiveInt.describe('I: rounds per harness phase, counting round 0 (the re-scoring of the incoming harness) (unit: rounds)').default(6),
});

export const PatienceSwitching = z.strictObject({
  kind: z.literal('patience').describe('Switching rule: adaptive patience on training signals (never the test set)'),
  /** W, B, P in epochs of D_weight (paper: 0.2 each), converted to steps by rounding (at least 1). */
  windowEpochs: Epochs.describe('W: the weight phase compares the mean reward of the last W steps (paper: 0.2) (unit: epochs of D_weight)').default(0.2),
  burnInEpochs: Epochs.describe('B: a weight phase runs more than B steps before patience may end it (paper: 0.2) (unit: epochs of D_weight)').default(0.2),
  patienceEpochs: Epochs.describe('P: a weight phase ends once P steps passed without a strictly higher windowed reward (paper: 0.2) (unit: epochs of D_weight)').default(0.2),
  harnessMinProposalRounds: PositiveInt.describe('A harness phase runs at least this many proposal rounds before patience may end it (unit: proposal rounds)').default(5),
  harnessPatienceRounds: PositiveInt.describe('A harness phase ends after this many proposal rounds without a strictly higher best success rate (unit: proposal rounds)').default(2),
  harnessMaxProposalRounds: PositiveInt.describe('Hard cap on proposal rounds per harness phase (unit: proposal rounds)').default(15),
  /** Stop a harness phase at once when a candidate reaches this training success rate (null: never). */
  harnessStopAtScore: Probability.describe('Stop a harness phase at once when a candidate reaches this D_harness success rate; null: never (unit: fraction 0-1)').nullable().default(null),
});

export const Switching = z.discriminatedUnion('kind', [FixedSwitching, PatienceSwitching]);
export type Switching = z.infer<typeof Switching>;

const ProposerConfig = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('builtin').describe('The built-in proposer: deterministic edits from a catalogue, seeded by the run seed and the round'),
    /** Off by default: the paper's proposer guidance rules out candidates that only retune constants. */
    allowConstantOnly: z.boolean().describe('Let through catalogue candidates whose diff against their parent changes only number literals (turn limits, retry budgets, tool parameters); absent: false, as the paper\'s proposer guidance asks').optional(),
  }),
  z.strictObject({
    kind: z.literal('coding-agent').describe('A coding-agent CLI (argv, no shell) run in a copy of the archive'),
    /** argv of the agent CLI; it runs with its cwd in a copy of the archive. */
    command: z.array(z.string()).min(1).describe('argv of the agent CLI; it runs with its working directory in a copy of the archive'),
    timeoutMs: PositiveInt.describe('Time limit of one proposer call (unit: ms)').default(1_800_000),
  }),
  z.strictObject({
    kind: z.literal('openai').describe('An OpenAI-compatible chat model as proposer'),
    baseUrl: z.string().url().describe('Base URL of the OpenAI-compatible API, e.g. https://api.openai.com/v1'),
    model: z.string().min(1).describe('Model name passed to the API'),
    /** Name of the environment variable holding the key (secrets never enter a run config). */
    apiKeyEnv: z.string().describe('Name of the environment variable holding the API key, read by the proposer worker (secrets never enter a run config)').default('OPENAI_API_KEY'),
    timeoutMs: PositiveInt.describe('Time limit of one request to the API; a retried request gets it again (unit: ms)').default(600_000),
    maxRetries: z.number().int().min(0).max(20).describe('Retries of a failed request (429 rate limit, 5xx, dropped connection), each after the wait the server\'s Retry-After asks for, else a backoff; absent: 4 (unit: retries)').optional(),
  }),
]);

// Checked here: a duration Temporal cannot parse would otherwise throw inside the workflow and leave the run stuck.
const DurationV1 = z.string().regex(/^\d+(\.\d+)?(ms|s|m|h|d)$/, 'expected a duration such as "500ms", "30s", "10m", "2h" or "1d"');

const DURATION_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
function durationMs(d: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(d);
  return m ? Number(m[1]) * DURATION_MS[m[2] as keyof typeof DURATION_MS] : NaN;
}

/**
 * Every option of one kind of activity: its timeouts and its whole retry policy. The workflow passes these
 * to Temporal as they are; nothing else (no file, no variable, no literal in workflow code) sets them.
 */
const ActivityOptionsV1 = z
  .strictObject({
    startToCloseTimeout: DurationV1.describe('Time limit of one attempt of the activity (unit: duration string: 500ms, 30s, 10m, 2h, 1d)').default('2h'),
    heartbeatTimeout: DurationV1.describe('A worker that stops heartbeating for this long is presumed dead and the attempt is retried (unit: duration string)').default('60s'),
    maximumAttempts: z.number().int().min(0).describe('Attempts before the activity fails the run; 0: unlimited (a preempted worker\'s work waits for the next worker) (unit: attempts)').default(0),
    initialInterval: DurationV1.describe('Retry policy: wait before the first retry (unit: duration string)').default('2s'),
    backoffCoefficient: z.number().min(1).max(100).describe('Retry policy: each retry waits this many times longer than the one before, up to maximumInterval (unit: factor)').default(2),
    maximumInterval: DurationV1.describe('Retry policy: longest wait between retries; at least initialInterval (unit: duration string)').default('1m'),
    nonRetryableErrorTypes: z.array(z.string().min(1)).describe('Retry policy: failure types that fail the activity at once instead of retrying (besides failures the activity itself marks non-retryable)').default(['ConfigError', 'InvalidInput']),
  })
  // Temporal rejects such a policy when the workflow schedules the activity: the run would look stuck.
  .refine((o) => !(durationMs(o.maximumInterval) < durationMs(o.initialInterval)), { path: ['maximumInterval'], message: 'must be at least initialInterval (Temporal rejects a retry policy whose longest wait is shorter than its first)' });

export const RunConfigV1 = z
  .strictObject({
    version: z.literal(1).describe('Config format version; this release reads 1'),
    /** A label for people; the workflow id identifies the run. */
    name: z.string().max(200).describe('A label for people; the workflow id identifies the run (unit: up to 200 characters)').default(''),
    method: Method.describe('Which procedure runs: whale-fixed, whale-adaptive, weights-only, harness-only, stagewise or prompt-only').default('whale-fixed'),
    /** For method 'stagewise': which lever goes first. */
    stagewiseOrder: z.enum(['weights-first', 'harness-first']).describe('For method stagewise: which lever goes first').default('weights-first'),
    /** A registered domain name ('search-qa', 'math', 'chess', or a user domain). */
    domain: z.string().min(1).describe('The task domain: a built-in name (search-qa, math, chess) or a user domain reference').default('math'),
    seed: z.number().int().min(0).max(2 ** 31 - 1).describe('Run seed: prompt order, sampling and proposals derive from it').default(0),
    model: z
      .strictObject({
        preset: z.string().describe('Model preset of the embedded runtime (model/presets)').default('embedded-1m'),
        /** Start weights; null = the domain's committed base policy. */
        baseCheckpoint: ArtifactRef.describe('Start weights (an artifact reference in the store); null: the domain\'s committed base policy').nullable().default(null),
        /** Start harness; null = the domain's seed harness h0. */
        baseHarness: ArtifactRef.describe('Start harness (an artifact reference in the store); null: the domain\'s seed harness h0').nullable().default(null),
      })
      .describe('Start weights and harness of the run')
      .prefault({}),
    /**
     * Where model.baseCheckpoint and model.baseHarness came from when the run branches off another run or an
     * exported agent bundle (`whale run --from`); null: a fresh start. A record for audits: it changes nothing.
     */
    lineage: z
      .strictObject({
        kind: z.enum(['run', 'bundle']).describe('run: branched off another run; bundle: started from an exported agent bundle'),
        /** The parent run's workflow id (for a bundle: the run it was exported from). */
        parentRunId: z.string().min(1).describe('The parent run\'s workflow id (for a bundle: the run it was exported from)'),
        /** Which of the parent's checkpoint-harness pairs: its final one or its best on D_test. */
        which: z.enum(['final', 'best']).describe('Which of the parent\'s checkpoint-harness pairs: its final one or its best on D_test'),
        /** The parent's domain (a registry name or a pinned domain-folder reference). */
        parentDomain: z.string().min(1).describe('The parent\'s domain (a registry name or a pinned domain-folder reference)'),
        /** The parent's D_test mean@8 of this pair, as its run recorded it (null: not evaluated). */
        parentMeanAt8: z.number().describe('The parent\'s D_test mean@8 of this pair, as its run recorded it; null: not evaluated (unit: fraction 0-1)').nullable().default(null),
        /** The bundle folder (kind 'bundle'), as given on the command line, and its manifest's sha256. */
        bundlePath: z.string().describe('The bundle folder (kind bundle) as given on the command line').nullable().default(null),
        bundleManifestSha256: z.string().regex(/^[0-9a-f]{64}$/).describe('sha256 of the bundle\'s manifest (kind bundle)').nullable().default(null),
      })
      .describe('Where model.baseCheckpoint and model.baseHarness came from when the run branches off another run or an exported agent bundle (whale run --from); null: a fresh start. A record for audits: it changes nothing')
      .nullable()
      .default(null),
    weight: z
      .strictObject({
        promptsPerStep: PositiveInt.describe('D_weight prompts per RSFT step (paper: 256; 64 fits the embedded model) (unit: prompts)').default(64),
        samplesPerPrompt: PositiveInt.describe('Rollouts per prompt in a step (paper: 8) (unit: samples)').default(8),
        temperature: z.number().positive().max(5).describe('Sampling temperature of training rollouts').default(1.0),
        topK: z.number().int().min(0).describe('Top-k sampling of training rollouts; 0: off (unit: tokens)').default(20),
        /** Keep trajectories with reward strictly above this (paper: 0.5). */
        acceptThreshold: Probability.describe('RSFT keeps trajectories with reward strictly above this (paper: 0.5) (unit: reward 0-1)').default(0.5),
        learningRate: z.number().positive().max(1).describe('AdamW learning rate of the fine-tune step').default(1e-4),
        minibatchSize: PositiveInt.describe('RSFT minibatch: one AdamW update per this many accepted trajectories (minibatchUnit trajectories; paper: 64) or accepted model calls (minibatchUnit calls) (unit: trajectories or model calls)').default(64),
        /**
         * 'calls' is the default of config version 1 (a default never changes within a version), so every v1
         * config and recorded run keeps its meaning; presets and new configs set 'trajectories'.
         */
        minibatchUnit: z.enum(['calls', 'trajectories']).describe('What minibatchSize counts. trajectories (the paper\'s unit; set by the presets): every kept model call of N accepted trajectories, gradients accumulated over fixed micro-batches, loss averaged over the minibatch\'s trained tokens, so a harness that adds turns does not add optimizer steps. calls: N accepted model calls per update (the version-1 default, kept so recorded runs keep their meaning)').default('calls'),
        weightDecay: z.number().min(0).describe('AdamW weight decay').default(0),
        clipNorm: z.number().positive().describe('Gradient clipping: global L2 norm').default(1.0),
        /** Single-threaded numerics and fixed batch composition: equal seeds give equal checkpoint hashes. */
        deterministic: z.boolean().describe('Fixed batch composition and a fixed gradient reduction order (each share of rows on a 1-thread session, shares combined in a fixed order across the model worker\'s threads): equal seeds and thread counts give equal checkpoint hashes').default(false),
        /** A D_weight subset chosen by the run seed, so the paper's schedules in epochs fit a short run. */
        taskLimit: PositiveInt.describe('Train on a subset of N D_weight prompts chosen by the run seed (the same N prompts for the whole run; epochs, E, W, B, P and the test cadence count over the subset); null: all of D_weight (unit: prompts)').nullable().default(null),
      })
      .describe('Weight phase: online rejection-sampling fine-tuning (RSFT)')
      .prefault({}),
    harness: z
      .strictObject({
        /** M: candidates per proposal round. */
        candidatesPerRound: PositiveInt.max(16).describe('M: candidates per proposal round (unit: candidates)').default(3),
        proposer: ProposerConfig.describe('Who writes harness candidates: builtin, coding-agent or openai').default({ kind: 'builtin' }),
        /** Candidates scored at once (bounded by model workers). */
        maxParallelEvaluations: PositiveInt.describe('Candidates scored at once, bounded by the model workers (unit: candidates)').default(1),
        /** Rollouts per D_harness task when scoring a candidate (paper: 1). */
        rolloutsPerTask: PositiveInt.describe('Rollouts per D_harness task when scoring a candidate (paper: 1) (unit: rollouts)').default(1),
        /** Limit D_harness to its first N tasks (null: all, 256 in every paper domain). */
        taskLimit: PositiveInt.describe('Limit D_harness to its first N tasks; null: all (256 in every paper domain) (unit: tasks)').nullable().default(null),
        temperature: z.number().positive().max(5).describe('Sampling temperature of the D_harness rollouts that score a candidate').default(1.0),
        topK: z.number().int().min(0).describe('Top-k sampling of the D_harness rollouts that score a candidate; 0: off (unit: tokens)').default(20),
      })
      .describe('Harness phase: Meta-Harness search')
      .prefault({}),
    switching: Switching.describe('When to switch between weight and harness phases: fixed or patience (whale-adaptive defaults to patience)').default({ kind: 'fixed', weightEpochs: 0.6, harnessRounds: 6 }),
    budget: z
      .strictObject({
        /** Total weight (RSFT) steps over the run; the run ends after the weight phase that reaches it. */
        totalWeightSteps: z.number().int().min(0).describe('Total RSFT steps over the run; the run ends after the weight phase that reaches it (unit: steps)').default(30),
        /** Optional cap on training + search rollouts. */
        maxRollouts: PositiveInt.describe('Optional cap on training + search rollouts; null: none (unit: rollouts)').nullable().default(null),
        /** Proposal rounds for harness-only runs and for the harness stage of stagewise runs. */
        harnessOnlyProposalRounds: PositiveInt.describe('Proposal rounds of harness-only runs and of the harness stage of stagewise runs; under protocol equal only a harness stage that a weight stage follows is held to it (unit: proposal rounds)').default(10),
        /**
         * How methods are held to a budget when they are compared (docs/method.md, "Comparison protocols").
         * 'none' is what config version 1 always did, so recorded runs keep their meaning.
         */
        protocol: z.enum(['none', 'equal', 'paper']).describe('Comparison protocol. none: totalWeightSteps and the optional maxRollouts, checked at weight steps only (a harness phase may overshoot; how version-1 runs ran). equal: every method spends at most maxRollouts training + search rollouts (required): a harness phase starts only when the rest pays for its rounds at their cap and one weight step after it, harness-only and stagewise propose until the budget is spent or the proposer is exhausted, and the run reports its unspent rollouts. paper: totalWeightSteps for every method that trains weights, harness rollouts on top (maxRollouts must be null)').default('none'),
        /** K: under protocol 'equal', a harness stage that runs until the budget is spent ends after K rounds that scored no new harness. */
        exhaustedAfterRounds: PositiveInt.describe('Under protocol equal: harness-only runs and stagewise harness stages end once this many proposal rounds in a row scored no new harness (only duplicates, invalid candidates or none), and report their unspent budget (unit: proposal rounds)').default(3),
      })
      .describe('When the run ends')
      .prefault({}),
    test: z
      .strictObject({
        /** Evaluate on D_test every this many epochs of weight steps (paper: about 0.1). */
        everyEpochs: Epochs.describe('Evaluate on D_test every this many epochs of weight steps (paper: about 0.1) (unit: epochs of D_weight)').default(0.1),
        samplesPerTask: PositiveInt.describe('Samples per D_test task for mean@8 (unit: samples)').default(8),
        /** Limit D_test to its first N tasks (null: all). */
        taskLimit: PositiveInt.describe('Limit D_test to its first N tasks; null: all (unit: tasks)').nullable().default(null),
        /** The comparison's grid: every method evaluated at the same rollout counts; null: no grid (as version-1 runs ran). */
        everyRollouts: PositiveInt.describe('Also evaluate on D_test at every multiple of this many training + search rollouts, so methods compare at the same counts: after the weight step or harness-only round that reaches it; a grid point inside a harness phase is evaluated at the phase end with the harness it started with; the exact count is recorded beside the grid point; null: no grid (unit: rollouts)').nullable().default(null),
      })
      .describe('Periodic evaluation on D_test (mean@8)')
      .prefault({}),
    execution: z
      .strictObject({
        modelTaskQueue: z.string().describe('Task queue of the model worker (rollouts, fine-tune steps, evaluations)').default('whale-model'),
        proposerTaskQueue: z.string().describe('Task queue of the proposer worker (proposals, validation, archive)').default('whale-proposer'),
        rollout: ActivityOptionsV1.describe('Options of rolloutBatch (training rollouts)').prefault({}),
        fineTune: ActivityOptionsV1.describe('Options of fineTuneStep').prefault({}),
        evaluate: ActivityOptionsV1.describe('Options of prepareRun, evaluateTest and evaluateHarness').prefault({ startToCloseTimeout: '4h' }),
        propose: ActivityOptionsV1.describe('Options of proposeHarnesses, validateHarness and finalizeHarnessPhase').prefault({ startToCloseTimeout: '1h', heartbeatTimeout: '120s' }),
      })
      .describe('Task queues and activity options (timeouts, retry policies) of the run: their only home (temporal.config.ts holds where to connect, not how activities run)')
      .prefault({}),
  })
  .superRefine((c, ctx) => {
    const mismatch = methodSwitchingProblem(c.method, c.switching.kind);
    if (mismatch) ctx.addIssue({ code: 'custom', path: ['switching', 'kind'], message: mismatch });
    if (c.method !== 'harness-only' && c.budget.totalWeightSteps < 1) {
      ctx.addIssue({ code: 'custom', path: ['budget', 'totalWeightSteps'], message: `method '${c.method}' trains weights: budget.totalWeightSteps must be at least 1` });
    }
    if (c.budget.protocol === 'equal' && c.budget.maxRollouts === null) {
      ctx.addIssue({ code: 'custom', path: ['budget', 'maxRollouts'], message: "protocol 'equal' holds every method to a total of training + search rollouts: set budget.maxRollouts (e.g. 3 epochs of weight steps: 3 x steps per epoch x promptsPerStep x samplesPerPrompt)" });
    }
    if (c.budget.protocol === 'paper' && c.budget.maxRollouts !== null) {
      ctx.addIssue({ code: 'custom', path: ['budget', 'maxRollouts'], message: "protocol 'paper' budgets weight steps (budget.totalWeightSteps) and lets harness rollouts come on top: remove budget.maxRollouts, or use protocol 'equal'" });
    }
    if (c.lineage && (!c.model.baseCheckpoint || !c.model.baseHarness)) {
      ctx.addIssue({ code: 'custom', path: ['lineage'], message: 'lineage records where model.baseCheckpoint and model.baseHarness came from: set both (whale run --from does)' });
    }
  });
export type RunConfig = z.infer<typeof RunConfigV1>;

/** The method names its switching kind; a mismatch is reported even when other fields fail to parse. */
function methodSwitchingProblem(method: unknown, kind: unknown): string | null {
  if (method === 'whale-adaptive' && kind !== undefined && kind !== 'patience') {
    return "method 'whale-adaptive' needs switching.kind 'patience' (or omit switching to get the patience defaults)";
  }
  if ((method === 'whale-fixed' || method === 'prompt-only') && kind !== undefined && kind !== 'fixed') {
    return `method '${String(method)}' needs switching.kind 'fixed'; use method 'whale-adaptive' for patience switching`;
  }
  return null;
}

/** Fills method-dependent defaults before parsing (adaptive runs default to patience switching). */
function withMethodDefaults(input: Record<string, unknown>): Record<string, unknown> {
  if (input.method === 'whale-adaptive' && input.switching === undefined) return { ...input, switching: { kind: 'patience' } };
  return input;
}

export type ParseResult = { ok: true; config: RunConfig } | { ok: false; problems: string[] };

/** Parses and expands a user's partial run config; problems name the field and what to do. */
export function expandRunConfig(input: unknown): ParseResult {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, problems: [`the run config must be a JSON object such as {"version": 1, "method": "weights-only", "domain": "math"}; got ${input === null ? 'null' : Array.isArray(input) ? 'an array' : typeof input}`] };
  }
  const obj = input as Record<string, unknown>;
  if (obj.version === undefined) return { ok: false, problems: ['version: missing; add "version": 1 (the config format this release reads)'] };
  if (obj.version !== 1) return { ok: false, problems: [`version: ${JSON.stringify(obj.version)} is not a config version this release knows; use "version": 1`] };
  const parsed = RunConfigV1.safeParse(withMethodDefaults(obj));
  if (parsed.success) return { ok: true, config: parsed.data };
  const problems = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(top level)'}: ${i.message}${i.code === 'unrecognized_keys' ? '; remove it or fix its spelling (the fields and their defaults: workflows/run-config.ts, RunConfigV1)' : ''}`);
  const switching = obj.switching as { kind?: unknown } | undefined;
  const mismatch = methodSwitchingProblem(obj.method ?? 'whale-fixed', typeof switching === 'object' && switching ? switching.kind : undefined);
  const line = mismatch ? `switching.kind: ${mismatch}` : null;
  if (line && !problems.includes(line)) problems.push(line);
  return { ok: false, problems };
}
