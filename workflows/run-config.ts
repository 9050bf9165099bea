// The run configuration in two tiers: a small, versioned, partial input (JSON file or preset) that the
// workflow expands deterministically with that version's defaults into an explicit config it records.
// Workflow-safe: zod only. Changing a default here is a versioned change: add RunConfigV2, keep V1.
import { z } from 'zod';
import { ArtifactRef } from '../store/artifact-ref';

export const METHODS = ['whale-fixed', 'whale-adaptive', 'weights-only', 'harness-only', 'stagewise', 'prompt-only'] as const;
export const Method = z.enum(METHODS);
export type Method = z.infer<typeof Method>;

const Probability = z.number().min(0).max(1);
const PositiveInt = z.number().int().positive();
const Epochs = z.number().positive().max(1000);

export const FixedSwitching = z.strictObject({
  kind: z.literal('fixed'),
  /** E: epochs of D_weight per weight phase (paper main runs: 0.6). */
  weightEpochs: Epochs.default(0.6),
  /** I: rounds per harness phase, counting round 0 (the re-scoring of the incoming harness). */
  harnessRounds: PositiveInt.default(6),
});

export const PatienceSwitching = z.strictObject({
  kind: z.literal('patience'),
  /** W, B, P in epochs of D_weight (paper: 0.2 each), converted to steps by rounding (at least 1). */
  windowEpochs: Epochs.default(0.2),
  burnInEpochs: Epochs.default(0.2),
  patienceEpochs: Epochs.default(0.2),
  harnessMinProposalRounds: PositiveInt.default(5),
  harnessPatienceRounds: PositiveInt.default(2),
  harnessMaxProposalRounds: PositiveInt.default(15),
  /** Stop a harness phase at once when a candidate reaches this training success rate (null: never). */
  harnessStopAtScore: Probability.nullable().default(null),
});

export const Switching = z.discriminatedUnion('kind', [FixedSwitching, PatienceSwitching]);
export type Switching = z.infer<typeof Switching>;

const ProposerConfig = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('builtin') }),
  z.strictObject({
    kind: z.literal('coding-agent'),
    /** argv of the agent CLI; it runs with its cwd in a copy of the archive. */
    command: z.array(z.string()).min(1),
    timeoutMs: PositiveInt.default(1_800_000),
  }),
  z.strictObject({
    kind: z.literal('openai'),
    baseUrl: z.string().url(),
    model: z.string().min(1),
    /** Name of the environment variable holding the key (secrets never enter a run config). */
    apiKeyEnv: z.string().default('OPENAI_API_KEY'),
    timeoutMs: PositiveInt.default(600_000),
  }),
]);

// Checked here: a duration Temporal cannot parse would otherwise throw inside the workflow and leave the run stuck.
const DurationV1 = z.string().regex(/^\d+(\.\d+)?(ms|s|m|h|d)$/, 'expected a duration such as "500ms", "30s", "10m", "2h" or "1d"');

const ActivityOptionsV1 = z.strictObject({
  startToCloseTimeout: DurationV1.default('2h'),
  heartbeatTimeout: DurationV1.default('60s'),
  maximumAttempts: z.number().int().min(0).default(0),
});

export const RunConfigV1 = z
  .strictObject({
    version: z.literal(1),
    /** A label for people; the workflow id identifies the run. */
    name: z.string().max(200).default(''),
    method: Method.default('whale-fixed'),
    /** For method 'stagewise': which lever goes first. */
    stagewiseOrder: z.enum(['weights-first', 'harness-first']).default('weights-first'),
    /** A registered domain name ('search-qa', 'math', 'chess', or a user domain). */
    domain: z.string().min(1).default('math'),
    seed: z.number().int().min(0).max(2 ** 31 - 1).default(0),
    model: z
      .strictObject({
        preset: z.string().default('embedded-1m'),
        /** Start weights; null = the domain's committed base policy. */
        baseCheckpoint: ArtifactRef.nullable().default(null),
        /** Start harness; null = the domain's seed harness h0. */
        baseHarness: ArtifactRef.nullable().default(null),
      })
      .prefault({}),
    /**
     * Where model.baseCheckpoint and model.baseHarness came from when the run branches off another run or an
     * exported agent bundle (`whale run --from`); null: a fresh start. A record for audits: it changes nothing.
     */
    lineage: z
      .strictObject({
        kind: z.enum(['run', 'bundle']),
        /** The parent run's workflow id (for a bundle: the run it was exported from). */
        parentRunId: z.string().min(1),
        /** Which of the parent's checkpoint-harness pairs: its final one or its best on D_test. */
        which: z.enum(['final', 'best']),
        /** The parent's domain (a registry name or a pinned domain-folder reference). */
        parentDomain: z.string().min(1),
        /** The parent's D_test mean@8 of this pair, as its run recorded it (null: not evaluated). */
        parentMeanAt8: z.number().nullable().default(null),
        /** The bundle folder (kind 'bundle'), as given on the command line, and its manifest's sha256. */
        bundlePath: z.string().nullable().default(null),
        bundleManifestSha256: z.string().regex(/^[0-9a-f]{64}$/).nullable().default(null),
      })
      .nullable()
      .default(null),
    weight: z
      .strictObject({
        promptsPerStep: PositiveInt.default(64),
        samplesPerPrompt: PositiveInt.default(8),
        temperature: z.number().positive().max(5).default(1.0),
        topK: z.number().int().min(0).default(20),
        /** Keep trajectories with reward strictly above this (paper: 0.5). */
        acceptThreshold: Probability.default(0.5),
        learningRate: z.number().positive().max(1).default(1e-4),
        minibatchSize: PositiveInt.default(64),
        weightDecay: z.number().min(0).default(0),
        clipNorm: z.number().positive().default(1.0),
        /** Single-threaded numerics and fixed batch composition: equal seeds give equal checkpoint hashes. */
        deterministic: z.boolean().default(false),
      })
      .prefault({}),
    harness: z
      .strictObject({
        /** M: candidates per proposal round. */
        candidatesPerRound: PositiveInt.max(16).default(3),
        proposer: ProposerConfig.default({ kind: 'builtin' }),
        /** Candidates scored at once (bounded by model workers). */
        maxParallelEvaluations: PositiveInt.default(1),
        /** Rollouts per D_harness task when scoring a candidate (paper: 1). */
        rolloutsPerTask: PositiveInt.default(1),
        /** Limit D_harness to its first N tasks (null: all, 256 in every paper domain). */
        taskLimit: PositiveInt.nullable().default(null),
      })
      .prefault({}),
    switching: Switching.default({ kind: 'fixed', weightEpochs: 0.6, harnessRounds: 6 }),
    budget: z
      .strictObject({
        /** Total weight (RSFT) steps over the run; the run ends after the weight phase that reaches it. */
        totalWeightSteps: z.number().int().min(0).default(30),
        /** Optional cap on training + search rollouts. */
        maxRollouts: PositiveInt.nullable().default(null),
        /** Proposal rounds for harness-only runs and for the harness stage of stagewise runs. */
        harnessOnlyProposalRounds: PositiveInt.default(10),
      })
      .prefault({}),
    test: z
      .strictObject({
        /** Evaluate on D_test every this many epochs of weight steps (paper: about 0.1). */
        everyEpochs: Epochs.default(0.1),
        samplesPerTask: PositiveInt.default(8),
        /** Limit D_test to its first N tasks (null: all). */
        taskLimit: PositiveInt.nullable().default(null),
      })
      .prefault({}),
    execution: z
      .strictObject({
        modelTaskQueue: z.string().default('whale-model'),
        proposerTaskQueue: z.string().default('whale-proposer'),
        rollout: ActivityOptionsV1.prefault({}),
        fineTune: ActivityOptionsV1.prefault({}),
        evaluate: ActivityOptionsV1.prefault({ startToCloseTimeout: '4h' }),
        propose: ActivityOptionsV1.prefault({ startToCloseTimeout: '1h', heartbeatTimeout: '120s' }),
      })
      .prefault({}),
  })
  .superRefine((c, ctx) => {
    const mismatch = methodSwitchingProblem(c.method, c.switching.kind);
    if (mismatch) ctx.addIssue({ code: 'custom', path: ['switching', 'kind'], message: mismatch });
    if (c.method !== 'harness-only' && c.budget.totalWeightSteps < 1) {
      ctx.addIssue({ code: 'custom', path: ['budget', 'totalWeightSteps'], message: `method '${c.method}' trains weights: budget.totalWeightSteps must be at least 1` });
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
