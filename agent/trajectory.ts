// The one trajectory format every rollout produces (training, harness scoring, test evaluation), its zod
// schema for JSONL readers, and the RSFT training-example builder: one example per kept model call, prompt
// tokens with weight 0 and generated tokens with weight 1.

import { AgentSystemError } from './errors';
import { z } from 'zod';
import { jsonValueSchema, parsedActionSchema } from './harness-contract';

/** 2: model calls record whether RSFT trains them (`kept`, `dropReason`). Version 1 files still parse: their
 * calls read as kept, which is what was trained on them. */
export const TRAJECTORY_SCHEMA_VERSION = 2;

export const episodeStopReasons = [
  'answer', // a submission ended the episode (the verifier decides whether it was right)
  'turn-limit',
  'token-budget', // the episode's generated-token budget is spent
  'context-full', // the next prompt would not fit the model's context
  'stop-rule', // the harness's shouldStop hook ended it
  'format-errors', // format-error retry budget exhausted
  'illegal-actions', // illegal-action retry budget exhausted
  'contract-violation', // e.g. an answer that is not a span of the model's text (reward forced to 0)
  'harness-failure', // a hook timed out, ran out of memory, threw or returned bad data (reward 0)
] as const;
export type EpisodeStopReason = (typeof episodeStopReasons)[number];

export const modelCallDropReasons = ['rejected-removed', 'harness-made'] as const;
export type ModelCallDropReason = (typeof modelCallDropReasons)[number];

const failureSchema = z.object({
  kind: z.enum(['compile-error', 'contract-violation', 'timeout', 'memory-limit', 'runtime-error', 'bad-return-value']),
  hook: z.string().optional(),
  reason: z.string(),
});

export const modelCallRecordSchema = z.object({
  turn: z.number().int().min(0),
  seed: z.number().int(),
  promptTokens: z.array(z.number().int()),
  generatedTokens: z.array(z.number().int()),
  logprobs: z.array(z.number()),
  text: z.string(),
  stopReason: z.enum(['stop-token', 'stop-string', 'max-new-tokens', 'context-full']),
  /** Whether RSFT trains this call when its trajectory is accepted (absent in version 1 files: kept). */
  kept: z.boolean().default(true),
  /** Why a call is not trained: `rejected-removed` (its action was not executed and a later `replace`
   * removed its message), `harness-made` (the harness replaced its action by a tool call it made itself). */
  dropReason: z.enum(modelCallDropReasons).nullable().default(null),
});
export type ModelCallRecord = z.infer<typeof modelCallRecordSchema>;

export const turnRecordSchema = z.object({
  turn: z.number().int().min(0),
  action: parsedActionSchema,
  /** Tool calls with their parameters and outputs. */
  tool: z.object({ tool: z.string(), input: z.string(), params: z.record(z.string(), z.number()), ok: z.boolean(), text: z.string(), data: jsonValueSchema }).optional(),
  /** Submissions (normalised answer or move) and the environment's outcome. */
  submit: z.object({ answer: z.string(), outcome: z.enum(['final', 'continue', 'illegal']), text: z.string() }).optional(),
  /** Messages the harness added or wrote for the next turn (absent when the episode ended here). */
  feedback: z.array(z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() })).optional(),
});
export type TurnRecord = z.infer<typeof turnRecordSchema>;

export const trajectorySchema = z.object({
  schemaVersion: z.union([z.literal(1), z.literal(TRAJECTORY_SCHEMA_VERSION)]),
  /** `${taskId}#${sampleIndex}@${step}`: unique within a run. */
  trajectoryId: z.string(),
  taskId: z.string(),
  itemId: z.string(),
  sampleIndex: z.number().int().min(0),
  runSeed: z.number().int(),
  step: z.number().int(),
  harnessId: z.string(),
  harnessName: z.string(),
  domain: z.string(),
  modelCalls: z.array(modelCallRecordSchema),
  turns: z.array(turnRecordSchema),
  /** The conversation as the model last saw it, plus its final message. */
  messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() })),
  finalAnswer: z.string().nullable(),
  stopReason: z.enum(episodeStopReasons),
  /** Why it stopped, in words (contract-violation and harness-failure reasons, stop-rule reason). */
  stopDetail: z.string(),
  harnessFailure: failureSchema.nullable(),
  reward: z.union([z.literal(0), z.literal(1)]),
  tokenCounts: z.object({ prompt: z.number().int(), generated: z.number().int() }),
});
export type Trajectory = z.infer<typeof trajectorySchema>;

/** One RSFT training example: a model call's prompt ++ generated tokens and per-token loss weights. */
export interface TrainingExample {
  trajectoryId: string;
  callIndex: number;
  tokens: number[];
  /** 0 for prompt tokens (context), 1 for generated tokens; same length as `tokens`. */
  weights: number[];
}

/**
 * Builds the fine-tune step's examples from recorded trajectories: keeps trajectories with
 * reward > minReward (0.5 by default, the paper's accept rule) and emits one example per kept model call
 * (a dropped call's text is not what the episode kept, so it is never a target). `callIndex` is the
 * call's index in `modelCalls`, so a dropped call leaves a gap. `includeDropped` keeps them too (the
 * pretraining corpus imitates every teacher turn, errors included).
 */
export function trainingExamplesFromTrajectories(trajectories: readonly Trajectory[], options: { minReward?: number; includeDropped?: boolean } = {}): TrainingExample[] {
  const minReward = options.minReward ?? 0.5;
  const out: TrainingExample[] = [];
  for (const t of trajectories) {
    if (!(t.reward > minReward)) continue;
    t.modelCalls.forEach((call, callIndex) => {
      if (!call.kept && !options.includeDropped) return;
      out.push({
        trajectoryId: t.trajectoryId,
        callIndex,
        tokens: [...call.promptTokens, ...call.generatedTokens],
        weights: [...call.promptTokens.map(() => 0), ...call.generatedTokens.map(() => 1)],
      });
    });
  }
  return out;
}

/** One trajectory per line. */
export function trajectoriesToJsonl(trajectories: readonly Trajectory[]): string {
  return trajectories.map((t) => JSON.stringify(t)).join('\n') + (trajectories.length ? '\n' : '');
}

/** Parses and validates JSONL; a bad line throws with its line number (the file is corrupt, not the run). */
export function trajectoriesFromJsonl(text: string): Trajectory[] {
  const out: Trajectory[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      throw new AgentSystemError(`trajectory JSONL line ${i + 1} is not valid JSON (a truncated or corrupted file): ${(err as Error).message}`);
    }
    const parsed = trajectorySchema.safeParse(json);
    if (!parsed.success) throw new AgentSystemError(`trajectory JSONL line ${i + 1} is not a valid trajectory: ${z.prettifyError(parsed.error)}`);
    out.push(parsed.data);
  });
  return out;
}
