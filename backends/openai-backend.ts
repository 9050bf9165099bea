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
// The dialect decides which fields a request carries (vLLM's extensions, OpenAI's fields only, or what
// `transformers serve` honours); servers that report no stop reason have their stop strings found in the text.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { decodeTokens, encodeText, SPECIAL_TOKENS, type GenerateRequest, type GenerateResult, type ModelBackend, type StopReason } from '../model';
import { parseChatPrompt } from './chat-template';
import type { OpenAIRolloutConfig } from './config';
import { WhaleError, type Fault } from '../common/errors';

export class OpenAIBackendError extends WhaleError {
  override name = 'OpenAIBackendError';
  /** Unreachable or overloaded server (retryable) vs a configuration the server cannot serve (WHALE_MODEL_BACKENDS). */
  get fault(): Fault {
    return this.retryable ? 'system' : 'user-input';
  }
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
  if (config.dialect === 'transformers-serve') throw new OpenAIBackendError(`transformers serve does not report a model's context: set rollouts.maxContext in ${'WHALE_MODEL_BACKENDS'} (e.g. the model's max_position_embeddings)`, false);
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

  /** transformers-serve: the model folder's generation config, the base of a request's generation_config. */
  private folderGenerationConfig: Promise<Record<string, unknown>> | null = null;

  constructor(private readonly opts: OpenAIBackendOptions) {
    this.maxContext = opts.maxContext;
    this.fetchImpl = opts.fetchImpl ?? fetch;
    const c = opts.config;
    if (c.dialect !== 'vllm' && c.tokenizer === 'project') {
      throw new OpenAIBackendError(`rollouts.dialect ${c.dialect} returns no token ids: set rollouts.tokenizer to 'foreign' (the trajectory's ids are then the project tokenizer's over the text)`, false);
    }
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

  private async body(req: GenerateRequest): Promise<Record<string, unknown>> {
    const c = this.opts.config;
    if (c.dialect !== 'vllm') return this.plainBody(req);
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

  /** OpenAI's own fields (dialect openai), or those `transformers serve` honours (no n, logprobs or top_k). */
  private async plainBody(req: GenerateRequest): Promise<Record<string, unknown>> {
    const c = this.opts.config;
    const input = c.api === 'completions' ? { prompt: decodeTokens(req.promptTokens) } : { messages: parseChatPrompt(req.promptTokens) };
    const common = { model: this.opts.model, ...input, max_tokens: req.maxNewTokens, temperature: req.temperature, top_p: req.topP, seed: req.seed, ...(req.stopStrings?.length ? { stop: req.stopStrings } : {}) };
    if (c.dialect === 'openai') {
      if (req.topK > 0) throw new OpenAIBackendError(`top_k ${req.topK} cannot be sent in the openai dialect (OpenAI's API has no top_k): use dialect vllm or transformers-serve, or sample with topK 0`, false);
      return { ...common, n: 1, logprobs: c.api === 'completions' ? 0 : true };
    }
    if (req.topK <= 0) return common;
    // transformers serve takes top_k only inside a generation_config, which replaces the model's whole
    // config (eos ids included): start from the folder's own, so only the sampling changes.
    return { ...common, generation_config: JSON.stringify({ ...(await this.modelGenerationConfig()), do_sample: req.temperature > 0, top_k: req.topK, temperature: req.temperature, top_p: req.topP }) };
  }

  private modelGenerationConfig(): Promise<Record<string, unknown>> {
    const file = path.join(this.opts.model, 'generation_config.json');
    this.folderGenerationConfig ??= fs.readFile(file, 'utf8').then(
      (text) => JSON.parse(text) as Record<string, unknown>,
      (err: Error) => {
        throw new OpenAIBackendError(`top_k with transformers serve needs the served model folder's generation_config.json readable by this worker (${file}: ${err.message}); or sample with topK 0`, false);
      },
    );
    return this.folderGenerationConfig;
  }

  private async generateOne(req: GenerateRequest): Promise<GenerateResult> {
    const c = this.opts.config;
    const url = `${c.baseUrl.replace(/\/$/, '')}/${c.api === 'completions' ? 'completions' : 'chat/completions'}`;
    const payload = JSON.stringify(await this.body(req));
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
    let text = choice.text ?? choice.message?.content ?? '';
    const serverLogprobs = choice.logprobs?.token_logprobs ?? choice.logprobs?.content?.map((e) => e.logprob) ?? null;
    const stopped = choice.finish_reason === 'stop';
    let stopReason: StopReason = stopped ? (typeof choice.stop_reason === 'string' ? 'stop-string' : 'stop-token') : 'max-new-tokens';
    if (stopped && c.dialect !== 'vllm' && choice.stop_reason == null) {
      // No stop reason reported: a stop string in the text is what stopped it (cut after its first one, as
      // include_stop_str_in_output keeps it); otherwise the model's end token.
      const ends = (req.stopStrings ?? []).map((s) => (text.indexOf(s) >= 0 ? text.indexOf(s) + s.length : Infinity));
      const end = Math.min(Infinity, ...ends);
      if (end !== Infinity) {
        text = text.slice(0, end);
        stopReason = 'stop-string';
      }
    }
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
