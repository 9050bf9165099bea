// Request -> sampler requests -> OpenAI response objects, for both endpoints. Pure functions of the parsed
// request and the sampler's results, so the HTTP layer (serve/server.ts) only moves bytes.
import { randomInt } from 'node:crypto';
import { encodeText, renderChatPrompt, SPECIAL_TOKENS, SPECIAL_TOKEN_TEXT, type ChatMessage, type GenerateRequest, type GenerateResult } from '../model';
import { ApiError, type ChatCompletionRequest, type ChatLogprobs, type CompletionLogprobs, type CompletionRequest } from './openai-schema';

const SPECIAL_BY_TEXT = new Map(Object.entries(SPECIAL_TOKEN_TEXT).map(([id, text]) => [text, Number(id)]));
const SPECIAL_RE = new RegExp(Object.values(SPECIAL_TOKEN_TEXT).map((t) => t.replace(/[|]/g, '\\|')).join('|'), 'g');

/** Appends in a loop: spreading a long array into push() overflows the call stack (~120k+ elements). */
function append(ids: number[], more: readonly number[]): void {
  for (const t of more) ids.push(t);
}

/** Text prompts of the completions endpoint may spell the chat template's special tokens by name. */
export function encodeWithSpecials(text: string): number[] {
  const ids: number[] = [];
  let last = 0;
  for (const m of text.matchAll(SPECIAL_RE)) {
    append(ids, encodeText(text.slice(last, m.index)));
    ids.push(SPECIAL_BY_TEXT.get(m[0]) as number);
    last = (m.index ?? 0) + m[0].length;
  }
  append(ids, encodeText(text.slice(last)));
  return ids;
}

/** The string of one token in logprobs: printable ASCII as itself, other bytes as `bytes:\xNN`, specials by name. */
export function tokenString(id: number, asIds: boolean): string {
  if (asIds) return `token_id:${id}`;
  if (id >= 256) return SPECIAL_TOKEN_TEXT[id] ?? `<|unused${id - 263}|>`;
  if (id >= 0x20 && id < 0x7f) return String.fromCharCode(id);
  if (id === 0x0a || id === 0x09 || id === 0x0d) return String.fromCharCode(id);
  return `bytes:\\x${id.toString(16).padStart(2, '0')}`;
}

function tokenBytes(id: number): number[] {
  return id < 256 ? [id] : encodeText(SPECIAL_TOKEN_TEXT[id] ?? '');
}

export interface SamplingPlan {
  prompts: number[][];
  n: number;
  requests: GenerateRequest[];
  includeStop: boolean;
  skipSpecial: boolean;
  stopStrings: string[];
}

type Common = Pick<CompletionRequest, 'max_tokens' | 'temperature' | 'top_p' | 'n' | 'stop' | 'seed' | 'top_k' | 'stop_token_ids' | 'include_stop_str_in_output' | 'ignore_eos' | 'skip_special_tokens'>;

/** One sampler request per (prompt, sample): sample i of prompt p draws with seed + p * n + i. */
export function planSampling(req: Common, prompts: number[][], maxContext: number, defaultMaxTokens: (promptLen: number) => number, maxRows: number, promptParam = 'prompt'): SamplingPlan {
  const n = req.n ?? 1;
  if (prompts.length * n > maxRows) throw new ApiError(400, `this request asks for ${prompts.length * n} sequences; the server takes at most ${maxRows} per request (--max-batch-rows)`, 'invalid_request_error', 'n');
  const stopStrings = req.stop == null ? [] : (Array.isArray(req.stop) ? req.stop : [req.stop]).filter((s) => s.length > 0);
  const stopTokens = [...(req.ignore_eos ? [] : [SPECIAL_TOKENS.END, SPECIAL_TOKENS.EOT]), ...(req.stop_token_ids ?? [])];
  const base = req.seed ?? randomInt(0, 2 ** 31 - 1);
  const requests: GenerateRequest[] = [];
  prompts.forEach((prompt, p) => {
    if (prompt.length === 0) throw new ApiError(400, `prompt ${p} is empty`, 'invalid_request_error', 'prompt');
    if (prompt.some((t) => t >= 264)) throw new ApiError(400, `prompt ${p} holds token ids outside the vocabulary [0, 264)`, 'invalid_request_error', 'prompt');
    if (prompt.length >= maxContext) {
      throw new ApiError(400, `This model's maximum context length is ${maxContext} tokens. However, ${promptParam === 'prompt' ? `prompt ${p}` : 'the rendered conversation'} alone has ${prompt.length} tokens (one byte is one token), leaving no room for a completion. Please reduce the length of the ${promptParam === 'prompt' ? 'prompt' : 'messages'}.`, 'invalid_request_error', promptParam, 'context_length_exceeded');
    }
    const maxTokens = req.max_tokens ?? defaultMaxTokens(prompt.length);
    if (prompt.length + maxTokens > maxContext) {
      throw new ApiError(400, `This model's maximum context length is ${maxContext} tokens. However, you requested ${prompt.length + maxTokens} tokens (${prompt.length} in the prompt, ${maxTokens} in the completion). Please reduce the length of the prompt or completion.`, 'invalid_request_error', 'max_tokens', 'context_length_exceeded');
    }
    for (let i = 0; i < n; i++) {
      requests.push({
        promptTokens: prompt, maxNewTokens: maxTokens, temperature: req.temperature ?? 1, topK: req.top_k && req.top_k > 0 ? req.top_k : 0, topP: req.top_p ?? 1,
        stopTokens, stopStrings, seed: (base + p * n + i) % 2 ** 31,
      });
    }
  });
  return { prompts, n, requests, includeStop: req.include_stop_str_in_output ?? false, skipSpecial: req.skip_special_tokens ?? true, stopStrings };
}

export interface ChoiceOut {
  index: number;
  promptIndex: number;
  tokens: number[];
  logprobs: number[];
  text: string;
  finishReason: 'stop' | 'length';
  stopReason: number | string | null;
}

/** The visible text of a result: special tokens skipped (by default), a matched stop string cut unless kept. */
export function toChoices(plan: SamplingPlan, results: GenerateResult[]): ChoiceOut[] {
  return results.map((r, index) => {
    let text = plan.skipSpecial ? new TextDecoder().decode(Uint8Array.from(r.tokens.filter((t) => t < 256))) : decodeWithSpecials(r.tokens);
    let stopReason: number | string | null = null;
    if (r.stopReason === 'stop-token') stopReason = r.tokens[r.tokens.length - 1];
    if (r.stopReason === 'stop-string') {
      const matched = plan.stopStrings.find((s) => text.endsWith(s)) ?? null;
      stopReason = matched;
      if (matched && !plan.includeStop) text = text.slice(0, text.length - matched.length);
    }
    const finishReason = r.stopReason === 'stop-token' || r.stopReason === 'stop-string' ? 'stop' : 'length';
    return { index, promptIndex: Math.floor(index / plan.n), tokens: r.tokens, logprobs: r.logprobs, text, finishReason, stopReason };
  });
}

function decodeWithSpecials(ids: number[]): string {
  let out = '';
  let bytes: number[] = [];
  const flush = () => {
    out += new TextDecoder().decode(Uint8Array.from(bytes));
    bytes = [];
  };
  for (const id of ids) {
    if (id < 256) bytes.push(id);
    else {
      flush();
      out += SPECIAL_TOKEN_TEXT[id] ?? '';
    }
  }
  flush();
  return out;
}

export function completionLogprobs(c: Pick<ChoiceOut, 'tokens' | 'logprobs'>, asIds: boolean, offset0 = 0): CompletionLogprobs {
  const tokens = c.tokens.map((t) => tokenString(t, asIds));
  const text_offset: number[] = [];
  let at = offset0;
  for (const t of c.tokens) {
    text_offset.push(at);
    at += t < 256 ? 1 : 0;
  }
  return { tokens, token_logprobs: c.logprobs, top_logprobs: null, text_offset };
}

export function chatLogprobs(c: Pick<ChoiceOut, 'tokens' | 'logprobs'>, asIds: boolean): ChatLogprobs {
  return { content: c.tokens.map((t, i) => ({ token: tokenString(t, asIds), logprob: c.logprobs[i], bytes: tokenBytes(t), top_logprobs: [] })) };
}

/** Chat messages in the project's template; `developer` counts as `system`, content parts are joined. */
export function chatPrompt(req: ChatCompletionRequest): number[] {
  const messages: ChatMessage[] = req.messages.map((m) => ({
    role: m.role === 'developer' ? 'system' : m.role,
    content: m.content === null ? '' : typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''),
  }));
  return renderChatPrompt(messages);
}

export function completionPrompts(req: CompletionRequest): number[][] {
  const p = req.prompt;
  if (typeof p === 'string') return [encodeWithSpecials(p)];
  if (p.length > 0 && typeof p[0] === 'number') return [p as number[]];
  return (p as Array<string | number[]>).map((x) => (typeof x === 'string' ? encodeWithSpecials(x) : x));
}
