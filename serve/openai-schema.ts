// The OpenAI-compatible wire format `whale serve` accepts and the OpenAI backend speaks: request schemas
// (zod, strict: an unknown field is a 400 naming it, as OpenAI does), the error shape
// {error: {message, type, param, code}}, and the vLLM extensions the project relies on (top_k,
// stop_token_ids, include_stop_str_in_output, return_token_ids, return_tokens_as_token_ids).
import { z } from 'zod';
import { WhaleError, type Fault } from '../common/errors';

/** An API error with its HTTP status; serialised as OpenAI's error object. */
export class ApiError extends WhaleError {
  override readonly name = 'ApiError';
  /** A 4xx is the request's fault; a 5xx or 429 the server's, and worth a retry. */
  get fault(): Fault {
    return this.status >= 500 || this.status === 429 ? 'system' : 'user-input';
  }

  constructor(
    readonly status: number,
    message: string,
    readonly type: 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'server_error' | 'rate_limit_error' = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }

  body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

const TokenIds = z.array(z.number().int().min(0));
const Stop = z.union([z.string(), z.array(z.string()).max(8)]).nullable();

/** Sampling fields shared by both endpoints (OpenAI's, then vLLM's extensions). */
const SamplingFields = {
  model: z.string().min(1),
  max_tokens: z.number().int().min(0).nullable().optional(),
  temperature: z.number().min(0).max(5).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  n: z.number().int().min(1).max(64).nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.strictObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  stop: Stop.optional(),
  seed: z.number().int().nullable().optional(),
  user: z.string().optional(),
  // Penalties are accepted at their neutral value only: the sampler has none.
  presence_penalty: z.literal(0).nullable().optional(),
  frequency_penalty: z.literal(0).nullable().optional(),
  // vLLM extensions.
  top_k: z.number().int().min(-1).nullable().optional(),
  stop_token_ids: TokenIds.max(16).nullable().optional(),
  include_stop_str_in_output: z.boolean().optional(),
  ignore_eos: z.boolean().optional(),
  skip_special_tokens: z.boolean().optional(),
  return_token_ids: z.boolean().nullable().optional(),
  return_tokens_as_token_ids: z.boolean().nullable().optional(),
};

export const CompletionRequest = z.strictObject({
  ...SamplingFields,
  prompt: z.union([z.string(), z.array(z.string()).min(1), TokenIds.min(1), z.array(TokenIds.min(1)).min(1)]),
  /** Number of top alternatives; this server returns the sampled token's logprob only, so 0. */
  logprobs: z.number().int().min(0).max(5).nullable().optional(),
  echo: z.literal(false).nullable().optional(),
  suffix: z.null().optional(),
});
export type CompletionRequest = z.infer<typeof CompletionRequest>;

const ContentPart = z.strictObject({ type: z.literal('text'), text: z.string() });
export const ChatMessageIn = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(ContentPart)]).nullable(),
  name: z.string().optional(),
  tool_call_id: z.string().optional(),
});

export const ChatCompletionRequest = z.strictObject({
  ...SamplingFields,
  messages: z.array(ChatMessageIn).min(1),
  max_completion_tokens: z.number().int().min(0).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

/** Parses a request body or throws a 400 naming the first bad field. */
export function parseRequest<T>(schema: z.ZodType<T>, body: unknown): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError(400, 'the request body must be a JSON object');
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0];
    throw new ApiError(400, `Unrecognized request argument supplied: ${key}`, 'invalid_request_error', key, 'unrecognized_argument');
  }
  const param = issue.path.map(String).join('.') || null;
  throw new ApiError(400, `${param ?? 'request'}: ${issue.message}`, 'invalid_request_error', param, 'invalid_value');
}

/** Completions: `logprobs` (sampled token only: top_logprobs stays null). */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: null;
  text_offset: number[];
}

/** Chat: `logprobs.content` (one entry per generated token). */
export interface ChatLogprobs {
  content: Array<{ token: string; logprob: number; bytes: number[]; top_logprobs: [] }>;
}
