// ModelBackend over any OpenAI-compatible server (whale serve, vLLM, SGLang): one HTTP request per
// sequence, up to maxConcurrency in flight (the server batches them), each with its own seed.
//
// Token ids and logprobs, in order of preference:
//   - completions + tokenizer 'project': the prompt goes as token ids; the generated ids come from vLLM's
//     `return_token_ids` (choices[].token_ids), or from `return_tokens_as_token_ids` logprob strings
//     ("token_id:N"); logprobs from `logprobs: 0` (choices[].logprobs.token_logprobs);
//   - chat + tokenizer 'project': messages (parsed back from the prompt ids) go to the server's template;
//     ids as above (chat logprobs.content), and the server's prompt_token_ids are checked against ours;
//   - tokenizer 'foreign': the ids are the project tokenizer's over the returned text (plus <|end|> when the
//     model stopped on its own), each server token's logprob on the last byte of its piece.
import { decodeTokens, encodeText, SPECIAL_TOKENS, type GenerateRequest, type GenerateResult, type ModelBackend, type StopReason } from '../model';
import { parseChatPrompt } from './chat-template';
import type { OpenAIRolloutConfig } from './config';

export class OpenAIBackendError extends Error {
  override name = 'OpenAIBackendError';
  constructor(message: string, readonly retryable: boolean) {
    super(message);
  }
}

interface Choice {
  text?: string;
  message?: { content?: string | null };
  finish_reason?: string | null;
  stop_reason?: number | string | null;
  token_ids?: number[] | null;
  prompt_token_ids?: number[] | null;
  logprobs?: { token_logprobs?: number[]; tokens?: string[]; content?: Array<{ token: string; logprob: number; bytes?: number[] | null }> } | null;
}

export interface OpenAIBackendOptions {
  config: OpenAIRolloutConfig;
  /** The model name this backend sends (resolved per checkpoint by the caller). */
  model: string;
  apiKey?: string;
  maxContext: number;
  fetchImpl?: typeof fetch;
}

/** GET {baseUrl}/models/{model} (or the list) for `max_model_len`; a clear error when the model is not served. */
export async function fetchMaxContext(config: OpenAIRolloutConfig, model: string, apiKey: string | undefined): Promise<number> {
  if (config.maxContext) return config.maxContext;
  const headers: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  const res = await fetch(`${config.baseUrl.replace(/\/$/, '')}/models/${encodeURIComponent(model)}`, { headers, signal: AbortSignal.timeout(config.requestTimeoutMs) }).catch((err: Error) => {
    throw new OpenAIBackendError(`cannot reach the inference server at ${config.baseUrl}: ${err.message}`, true);
  });
  const body = (await res.json().catch(() => ({}))) as { max_model_len?: number; error?: { message?: string } };
  if (res.status === 404) throw new OpenAIBackendError(`the inference server at ${config.baseUrl} does not serve model ${model}: ${body.error?.message ?? 'not found'}`, true);
  if (!res.ok) throw new OpenAIBackendError(`GET ${config.baseUrl}/models/${model}: HTTP ${res.status} ${body.error?.message ?? ''}`, res.status >= 500 || res.status === 429);
  if (typeof body.max_model_len !== 'number') throw new OpenAIBackendError(`the server at ${config.baseUrl} does not report max_model_len for ${model}: set rollouts.maxContext in ${'WHALE_MODEL_BACKENDS'}`, false);
  return body.max_model_len;
}

export class OpenAIBackend implements ModelBackend {
  readonly maxContext: number;
  private readonly fetchImpl: typeof fetch;
  /** Requests answered (for tests and benchmarks). */
  readonly stats = { requests: 0, retries: 0 };

  constructor(private readonly opts: OpenAIBackendOptions) {
    this.maxContext = opts.maxContext;
    this.fetchImpl = opts.fetchImpl ?? fetch;
  }

  async generate(requests: GenerateRequest[]): Promise<GenerateResult[]> {
    const results: GenerateResult[] = new Array(requests.length);
    let next = 0;
    const lane = async () => {
      while (next < requests.length) {
        const i = next++;
        results[i] = await this.generateOne(requests[i]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.opts.config.maxConcurrency, requests.length) }, lane));
    return results;
  }

  private body(req: GenerateRequest): Record<string, unknown> {
    const c = this.opts.config;
    const common = {
      model: this.opts.model, max_tokens: req.maxNewTokens, temperature: req.temperature, top_p: req.topP, seed: req.seed, n: 1,
      // vLLM extensions (SGLang takes the same names); -1 switches top-k off in vLLM.
      top_k: req.topK > 0 ? req.topK : -1,
      ...(req.stopStrings?.length ? { stop: req.stopStrings } : {}),
      include_stop_str_in_output: true,
      return_token_ids: true,
      ...(c.tokenizer === 'project' ? { stop_token_ids: req.stopTokens, skip_special_tokens: false } : {}),
    };
    if (c.api === 'completions') {
      return { ...common, prompt: c.tokenizer === 'project' ? req.promptTokens : decodeTokens(req.promptTokens), logprobs: 0 };
    }
    return { ...common, messages: parseChatPrompt(req.promptTokens), logprobs: true };
  }

  private async generateOne(req: GenerateRequest): Promise<GenerateResult> {
    const c = this.opts.config;
    const url = `${c.baseUrl.replace(/\/$/, '')}/${c.api === 'completions' ? 'completions' : 'chat/completions'}`;
    const payload = JSON.stringify(this.body(req));
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}) };
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.fetchImpl(url, { method: 'POST', headers, body: payload, signal: AbortSignal.timeout(c.requestTimeoutMs) });
        const text = await res.text();
        if (!res.ok) {
          let message = text.slice(0, 500);
          try {
            message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
          } catch {
            // not JSON: keep the raw text
          }
          throw new OpenAIBackendError(`POST ${url} (model ${this.opts.model}): HTTP ${res.status}: ${message}`, res.status === 429 || res.status >= 500);
        }
        const body = JSON.parse(text) as { choices?: Choice[]; prompt_token_ids?: number[] | null };
        const choice = body.choices?.[0];
        if (!choice) throw new OpenAIBackendError(`POST ${url}: the response has no choices`, false);
        this.stats.requests++;
        return this.toResult(req, choice, body.prompt_token_ids ?? choice.prompt_token_ids ?? null);
      } catch (err) {
        const retryable = err instanceof OpenAIBackendError ? err.retryable : true; // network errors and timeouts
        if (!retryable || attempt >= c.maxRetries) {
          throw err instanceof OpenAIBackendError ? err : new OpenAIBackendError(`POST ${url} (model ${this.opts.model}) failed after ${attempt + 1} attempts: ${(err as Error).message}`, true);
        }
        this.stats.retries++;
        await new Promise((r) => setTimeout(r, Math.min(8_000, 250 * 2 ** attempt)));
      }
    }
  }

  private toResult(req: GenerateRequest, choice: Choice, promptIds: number[] | null): GenerateResult {
    const c = this.opts.config;
    const text = choice.text ?? choice.message?.content ?? '';
    const serverLogprobs = choice.logprobs?.token_logprobs ?? choice.logprobs?.content?.map((e) => e.logprob) ?? null;
    const stopped = choice.finish_reason === 'stop';
    const stopReason: StopReason = stopped ? (typeof choice.stop_reason === 'string' ? 'stop-string' : 'stop-token') : 'max-new-tokens';
    if (c.tokenizer === 'project') {
      if (c.api === 'chat' && promptIds && promptIds.join(',') !== req.promptTokens.join(',')) {
        throw new OpenAIBackendError(`the server's chat template renders a different prompt than the project's (${promptIds.length} vs ${req.promptTokens.length} tokens): use api 'completions' or tokenizer 'foreign'`, false);
      }
      const asIds = (choice.logprobs?.tokens ?? choice.logprobs?.content?.map((e) => e.token))?.map((t) => /^token_id:(\d+)$/.exec(t)?.[1]);
      const tokens = choice.token_ids ?? (asIds && asIds.every((x) => x !== undefined) ? asIds.map(Number) : null);
      if (!tokens) throw new OpenAIBackendError(`the server returned no token ids: it must support vLLM's return_token_ids (or return_tokens_as_token_ids), or set tokenizer 'foreign'`, false);
      if (!serverLogprobs || serverLogprobs.length !== tokens.length) throw new OpenAIBackendError(`the server returned ${serverLogprobs?.length ?? 'no'} logprobs for ${tokens.length} tokens`, false);
      return { tokens, text: decodeTokens(tokens), logprobs: serverLogprobs.map((x) => (x === null ? 0 : x)), stopReason };
    }
    // Foreign tokenizer: project byte ids over the text; the end of turn is the project's <|end|>.
    const tokens = encodeText(text);
    const logprobs = new Array<number>(tokens.length).fill(0);
    const pieces = choice.logprobs?.content?.map((e) => e.bytes?.length ?? encodeText(e.token).length) ?? choice.logprobs?.tokens?.map((t) => encodeText(t).length) ?? [];
    let at = 0;
    pieces.forEach((len, i) => {
      at += len;
      const slot = Math.min(tokens.length, at) - 1;
      if (slot >= 0) logprobs[slot] += serverLogprobs?.[i] ?? 0;
    });
    if (stopped && stopReason === 'stop-token') {
      tokens.push(SPECIAL_TOKENS.END);
      logprobs.push(0);
    }
    return { tokens, text: decodeTokens(tokens), logprobs, stopReason };
  }

  async close(): Promise<void> {
    // Nothing native to release: connections are pooled by fetch.
  }
}
