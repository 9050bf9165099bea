// The model worker's backend configuration: where rollouts generate (the embedded ONNX sampler, or any
// OpenAI-compatible server) and where fine-tune steps train (the embedded trainer, or an external trainer
// behind a command or an HTTP endpoint). Deployment facts, so they live with the worker, not in the run
// config: the same run can move between machines, and secrets stay out of history (keys are named by
// environment variable). Read from WHALE_MODEL_BACKENDS: inline JSON, or a path to a JSON file.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export const OpenAIRolloutConfig = z.strictObject({
  kind: z.literal('openai'),
  /** Base URL including /v1, e.g. http://127.0.0.1:8000/v1 (whale serve, vLLM, SGLang). */
  baseUrl: z.string().url(),
  /** `completions` sends the prompt as token ids (exact); `chat` sends messages (the server's chat template). */
  api: z.enum(['completions', 'chat']).default('completions'),
  /**
   * Model name per checkpoint: `{sha256}` is replaced by the checkpoint's hash (whale serve --store names
   * checkpoints `ckpt-<sha256>`); a checkpoint pointer (an external trainer's adapter) uses its own name.
   */
  model: z.string().min(1).default('ckpt-{sha256}'),
  /**
   * `project`: the served model uses the project's byte vocabulary (whale serve, or an exported project
   * checkpoint), so the server's token ids (vLLM `return_token_ids`) are used as they are; `foreign`: another
   * tokenizer (e.g. Qwen on vLLM), so the trajectory's ids come from the project tokenizer over the text.
   */
  tokenizer: z.enum(['project', 'foreign']).default('project'),
  /**
   * Which request fields the server takes. `vllm` (also whale serve, SGLang): OpenAI's plus top_k,
   * stop_token_ids, return_token_ids and the other extensions. `openai`: OpenAI's fields only (a strict server
   * answers 400 to the rest; no top_k). `transformers-serve`: the fields `transformers serve` honours (no n,
   * logprobs or top_k; top_k goes inside a generation_config built from the model folder's own). The last two
   * return no token ids, so they need tokenizer `foreign`.
   */
  dialect: z.enum(['vllm', 'openai', 'transformers-serve']).default('vllm'),
  /** Environment variable holding the bearer key (none: no Authorization header). */
  apiKeyEnv: z.string().optional(),
  /** Requests in flight at once (one request per sequence; the server batches them). */
  maxConcurrency: z.number().int().min(1).max(4096).default(64),
  /** Per HTTP request; a timed-out request is retried (bounded). */
  requestTimeoutMs: z.number().int().positive().default(600_000),
  /** Retries of one request on a network error, 429 or 5xx before the batch fails (and Temporal retries it). */
  maxRetries: z.number().int().min(0).max(10).default(3),
  /** The model's context in tokens; read from GET /v1/models (`max_model_len`) when omitted. */
  maxContext: z.number().int().positive().optional(),
});
export type OpenAIRolloutConfig = z.infer<typeof OpenAIRolloutConfig>;

export const ExternalTrainerConfig = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('command'),
    /** argv; the request is written to its stdin, the response read from the last line of its stdout. */
    command: z.array(z.string()).min(1),
    timeoutMs: z.number().int().positive().default(7_200_000),
  }),
  z.strictObject({
    kind: z.literal('http'),
    /** POST endpoint taking the request JSON and answering the response JSON. */
    url: z.string().url(),
    apiKeyEnv: z.string().optional(),
    timeoutMs: z.number().int().positive().default(7_200_000),
  }),
]);
export type ExternalTrainerConfig = z.infer<typeof ExternalTrainerConfig>;

export const ModelBackendsConfig = z.strictObject({
  rollouts: z.discriminatedUnion('kind', [z.strictObject({ kind: z.literal('embedded') }), OpenAIRolloutConfig]).default({ kind: 'embedded' }),
  trainer: z.union([z.strictObject({ kind: z.literal('embedded') }), ExternalTrainerConfig]).default({ kind: 'embedded' }),
});
export type ModelBackendsConfig = z.infer<typeof ModelBackendsConfig>;

export const BACKENDS_ENV = 'WHALE_MODEL_BACKENDS';

/** Parses WHALE_MODEL_BACKENDS (inline JSON or a file path); unset means embedded for both. */
export function loadBackendsConfig(env: NodeJS.ProcessEnv = process.env): ModelBackendsConfig {
  const raw = env[BACKENDS_ENV]?.trim();
  if (!raw) return ModelBackendsConfig.parse({});
  let text = raw;
  if (!raw.startsWith('{')) {
    try {
      text = readFileSync(raw, 'utf8');
    } catch (err) {
      throw new Error(`${BACKENDS_ENV}=${raw}: not inline JSON and not a readable file (${(err as Error).message})`);
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${BACKENDS_ENV}: invalid JSON: ${(err as Error).message}`);
  }
  const parsed = ModelBackendsConfig.safeParse(json);
  if (!parsed.success) {
    throw new Error(`${BACKENDS_ENV}: invalid backend configuration:\n${parsed.error.issues.map((i) => `  ${i.path.join('.') || '(top level)'}: ${i.message}`).join('\n')}\n(see docs/scale-out.md)`);
  }
  return parsed.data;
}
