// The external-trainer protocol (whale-external-trainer/2, docs/scale-out.md): the request a fine-tune step
// sends, the response it expects, and the JSONL dataset of accepted trajectories (one record per kept model
// call: its trajectory, the messages the model saw plus its reply, a per-message loss mask, and the project
// token ids). Version 2 added the record's `trajectory_id` and the request's `minibatch_unit`; a version-1
// request still reads (its minibatches count model calls).
import { z } from 'zod';
import { ArtifactRef } from '../store/artifact-ref';
import { renderChatPrompt, type ChatMessage } from '../model';
import { assistantContent } from '../agent/episode';
import { trainingExamplesFromTrajectories, type TrainingExample, type Trajectory } from '../agent/trajectory';
import { parseChatPrompt } from './chat-template';

export const TRAINER_PROTOCOL = 'whale-external-trainer/2';
export const TRAINER_PROTOCOL_V1 = 'whale-external-trainer/1';
const Protocol = z.enum([TRAINER_PROTOCOL_V1, TRAINER_PROTOCOL]);

const Message = z.strictObject({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() });

export const DatasetRecord = z.strictObject({
  /** `<trajectoryId>/<model call index>`. */
  id: z.string(),
  /** The trajectory the call belongs to: a trajectory minibatch takes all of its records (version 2). */
  trajectory_id: z.string().optional(),
  /** The prompt's messages, then the model's reply as the last (assistant) message. */
  messages: z.array(Message).min(1),
  /** Per message: 1 = train on it (the reply), 0 = context. */
  loss_mask: z.array(z.union([z.literal(0), z.literal(1)])),
  /** Exact project-tokenizer ids (a trainer with the project's vocabulary uses these, not the messages). */
  prompt_token_ids: z.array(z.number().int().min(0)).optional(),
  completion_token_ids: z.array(z.number().int().min(0)).optional(),
});
export type DatasetRecord = z.infer<typeof DatasetRecord>;

export const TrainRequest = z.strictObject({
  protocol: Protocol,
  run_id: z.string(),
  step: z.number().int().min(0),
  seed: z.number().int(),
  dataset: z.strictObject({ path: z.string(), sha256: z.string(), records: z.number().int().min(1) }),
  base_checkpoint: z.strictObject({
    ref: ArtifactRef,
    /** The checkpoint file (in the shared artifact directory) when it is a WHALE checkpoint. */
    path: z.string().nullable(),
    /** The served model/adapter name when the base is a pointer to weights outside the store. */
    model: z.string().nullable(),
  }),
  hyperparameters: z.strictObject({
    learning_rate: z.number().positive(),
    minibatch_size: z.number().int().positive(),
    /**
     * What minibatch_size counts (version 2; version 1 means calls). trajectories: one update per
     * minibatch_size trajectories over all their records, the loss averaged over the minibatch's trained
     * tokens; calls: one update per minibatch_size records.
     */
    minibatch_unit: z.enum(['calls', 'trajectories']).optional(),
    weight_decay: z.number().min(0),
    clip_norm: z.number().positive(),
    epochs: z.literal(1),
  }),
  /** Equal requests must give equal checkpoints (single-threaded numerics, fixed order). */
  deterministic: z.boolean(),
  /** A directory (shared with the caller) for the trainer's output files. */
  output_dir: z.string(),
}).superRefine((r, ctx) => {
  if (r.protocol === TRAINER_PROTOCOL && r.hyperparameters.minibatch_unit === undefined) {
    ctx.addIssue({ code: 'custom', path: ['hyperparameters', 'minibatch_unit'], message: `${TRAINER_PROTOCOL} needs minibatch_unit ("trajectories" or "calls")` });
  }
  if (r.protocol === TRAINER_PROTOCOL_V1 && r.hyperparameters.minibatch_unit === 'trajectories') {
    ctx.addIssue({ code: 'custom', path: ['hyperparameters', 'minibatch_unit'], message: `${TRAINER_PROTOCOL_V1} minibatches count model calls; send ${TRAINER_PROTOCOL} for minibatch_unit "trajectories"` });
  }
});
export type TrainRequest = z.infer<typeof TrainRequest>;

/** A request's minibatch unit (version 1: calls). */
export function minibatchUnitOf(r: TrainRequest): 'calls' | 'trajectories' {
  return r.hyperparameters.minibatch_unit ?? 'calls';
}

export const TrainResponse = z.object({
  protocol: Protocol.optional(),
  checkpoint: z.union([
    z.strictObject({ path: z.string().min(1) }).describe('a WHALE checkpoint file the caller copies into its store'),
    z.strictObject({ ref: ArtifactRef }).describe('a checkpoint already in the shared store'),
    z.strictObject({ model: z.string().min(1), uri: z.string().optional() }).describe('weights served under a name (e.g. a LoRA adapter)'),
  ]),
  metrics: z
    .object({ minibatches: z.number().int().min(0).optional(), mean_loss: z.number().nullable().optional(), trained_tokens: z.number().min(0).optional() })
    .optional(),
});
export type TrainResponse = z.infer<typeof TrainResponse>;

/** The dataset of a step: accepted trajectories' kept model calls, in the embedded trainer's example order. */
export function datasetFromTrajectories(trajectories: readonly Trajectory[], acceptThreshold: number): DatasetRecord[] {
  const byId = new Map(trajectories.map((t) => [t.trajectoryId, t]));
  return trainingExamplesFromTrajectories(trajectories, { minReward: acceptThreshold }).map((e) => {
    const call = (byId.get(e.trajectoryId) as Trajectory).modelCalls[e.callIndex];
    const prompt = parseChatPrompt(call.promptTokens);
    return {
      id: `${e.trajectoryId}/${e.callIndex}`,
      trajectory_id: e.trajectoryId,
      messages: [...prompt, { role: 'assistant', content: assistantContent(call.generatedTokens) }],
      loss_mask: [...prompt.map(() => 0 as const), 1 as const],
      prompt_token_ids: call.promptTokens,
      completion_token_ids: call.generatedTokens,
    };
  });
}

export function datasetToJsonl(records: readonly DatasetRecord[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

/**
 * Training examples from a dataset, for a trainer with the project's vocabulary: the exact ids when present,
 * else the messages rendered by the project's template with the masked messages' tokens (content and
 * <|end|>) weighted 1.
 */
export function examplesFromDataset(jsonl: string): TrainingExample[] {
  const out: TrainingExample[] = [];
  jsonl.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let parsed: DatasetRecord;
    try {
      parsed = DatasetRecord.parse(JSON.parse(line));
    } catch (err) {
      throw new Error(`dataset line ${i + 1} is not a valid record: ${(err as Error).message}`);
    }
    if (parsed.loss_mask.length !== parsed.messages.length) throw new Error(`dataset line ${i + 1}: loss_mask has ${parsed.loss_mask.length} entries for ${parsed.messages.length} messages`);
    const [trajectoryId, call] = [parsed.trajectory_id ?? parsed.id.slice(0, parsed.id.lastIndexOf('/')), Number(parsed.id.slice(parsed.id.lastIndexOf('/') + 1))];
    if (parsed.prompt_token_ids && parsed.completion_token_ids) {
      out.push({ trajectoryId, callIndex: call, tokens: [...parsed.prompt_token_ids, ...parsed.completion_token_ids], weights: [...parsed.prompt_token_ids.map(() => 0), ...parsed.completion_token_ids.map(() => 1)] });
      return;
    }
    const tokens: number[] = [];
    const weights: number[] = [];
    parsed.messages.forEach((m: ChatMessage, k) => {
      const ids = renderChatPrompt([m]).slice(0, -1); // role header, content, <|end|> (without the trailing assistant header)
      tokens.push(...ids);
      weights.push(0, ...ids.slice(1).map(() => parsed.loss_mask[k]));
    });
    out.push({ trajectoryId, callIndex: call, tokens, weights });
  });
  return out;
}
