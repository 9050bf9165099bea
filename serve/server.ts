// `whale serve`'s HTTP layer (node:http): routes, bearer-key check, body limits, JSON and SSE responses.
// Errors always have OpenAI's shape {error: {message, type, param, code}} and a matching status code.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { ApiError, ChatCompletionRequest, CompletionRequest, parseRequest } from './openai-schema';
import { chatLogprobs, chatPrompt, completionLogprobs, completionPrompts, planSampling, toChoices, type ChoiceOut } from './generation';
import type { ModelRegistry } from './model-registry';

export interface ServeOptions {
  registry: ModelRegistry;
  host: string;
  port: number;
  /** Bearer key every request must carry (none: open, which is why the default host is loopback). */
  apiKey?: string;
  /** Largest request body accepted (413 above it). */
  maxBodyBytes: number;
  /** Largest number of sequences (prompts x n) in one request. */
  maxRowsPerRequest: number;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, err: unknown): void {
  const api = err instanceof ApiError ? err : new ApiError(500, `internal error: ${(err as Error).message}`, 'server_error');
  if (res.headersSent) {
    // Mid-stream: the error goes out as one more event, then the stream ends.
    res.write(`data: ${JSON.stringify(api.body())}\n\n`);
    res.end();
    return;
  }
  sendJson(res, api.status, api.body());
}

async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new ApiError(413, `request body of ${declared} bytes exceeds the limit of ${limit} bytes`, 'invalid_request_error', null, 'request_too_large');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new ApiError(413, `request body exceeds the limit of ${limit} bytes`, 'invalid_request_error', null, 'request_too_large');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    throw new ApiError(400, `the request body is not valid JSON: ${(err as Error).message}`, 'invalid_request_error', null, 'invalid_json');
  }
}

function checkAuth(req: IncomingMessage, key: string | undefined): void {
  if (!key) return;
  const header = req.headers.authorization ?? '';
  const given = Buffer.from(header.startsWith('Bearer ') ? header.slice(7) : '');
  const want = Buffer.from(key);
  if (given.length !== want.length || !timingSafeEqual(given, want)) {
    throw new ApiError(401, header ? 'Incorrect API key provided.' : 'You did not provide an API key: send it as `Authorization: Bearer <key>`.', 'authentication_error', null, 'invalid_api_key');
  }
}

export function createServeHandler(opts: ServeOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const routes: Record<string, Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<void>>> = {
    '/v1/models': { GET: async (_req, res) => sendJson(res, 200, { object: 'list', data: opts.registry.listed().map(modelCard) }) },
    '/v1/completions': { POST: (req, res) => completions(opts, req, res) },
    '/v1/chat/completions': { POST: (req, res) => chatCompletions(opts, req, res) },
    '/health': { GET: async (_req, res) => sendJson(res, 200, { status: 'ok' }) },
  };
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const run = async () => {
      if (url.pathname !== '/health') checkAuth(req, opts.apiKey);
      const card = /^\/v1\/models\/(.+)$/.exec(url.pathname);
      if (card && req.method === 'GET') {
        const model = await opts.registry.resolve(decodeURIComponent(card[1]));
        return sendJson(res, 200, { ...modelCard(model.id), max_model_len: model.maxContext });
      }
      const route = routes[url.pathname];
      if (!route) throw new ApiError(404, `Unknown route ${req.method} ${url.pathname}: this server answers /v1/models, /v1/completions and /v1/chat/completions.`, 'not_found_error', null, 'unknown_url');
      const handler = route[req.method ?? ''];
      if (!handler) {
        res.setHeader('allow', Object.keys(route).join(', '));
        throw new ApiError(405, `Method ${req.method} is not allowed on ${url.pathname}; use ${Object.keys(route).join(' or ')}.`, 'invalid_request_error', null, 'method_not_allowed');
      }
      await handler(req, res);
    };
    run().catch((err) => sendError(res, err));
  };
}

function modelCard(id: string): Record<string, unknown> {
  return { id, object: 'model', created: 0, owned_by: 'whale' };
}

async function completions(opts: ServeOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = parseRequest(CompletionRequest, await readJson(req, opts.maxBodyBytes));
  if (body.logprobs) throw new ApiError(400, 'logprobs > 0 (top alternatives) is not available from this sampler; use logprobs: 0 for the sampled tokens\' log-probabilities', 'invalid_request_error', 'logprobs');
  const model = await opts.registry.resolve(body.model);
  const plan = planSampling(body, completionPrompts(body), model.maxContext, () => 16, opts.maxRowsPerRequest);
  const choices = toChoices(plan, await model.generate(plan.requests));
  const asIds = body.return_tokens_as_token_ids ?? false;
  const id = `cmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const usage = usageOf(plan.prompts, choices);
  const withLogprobs = body.logprobs !== undefined && body.logprobs !== null;
  if (body.stream) {
    startStream(res);
    for (const c of choices) {
      // One event per token (the sampler hands over whole rows, so events follow generation, not during it).
      const pieces = tokenPieces(c.tokens);
      let sent = 0;
      c.tokens.forEach((t, i) => {
        // Never past the final text (a cut stop string is not streamed).
        const text = pieces[i].slice(0, Math.max(0, c.text.length - sent));
        sent += text.length;
        event(res, { id, object: 'text_completion', created, model: body.model, choices: [{ index: c.index, text, logprobs: withLogprobs ? completionLogprobs({ tokens: [t], logprobs: [c.logprobs[i]] }, asIds) : null, finish_reason: null, ...(body.return_token_ids ? { token_ids: [t] } : {}) }] });
      });
      event(res, { id, object: 'text_completion', created, model: body.model, choices: [{ index: c.index, text: '', logprobs: null, finish_reason: c.finishReason, stop_reason: c.stopReason, ...(body.return_token_ids ? { prompt_token_ids: plan.prompts[c.promptIndex] } : {}) }] });
    }
    if (body.stream_options?.include_usage) event(res, { id, object: 'text_completion', created, model: body.model, choices: [], usage });
    return endStream(res);
  }
  sendJson(res, 200, {
    id, object: 'text_completion', created, model: body.model,
    choices: choices.map((c) => ({
      index: c.index, text: c.text, logprobs: withLogprobs ? completionLogprobs(c, asIds) : null, finish_reason: c.finishReason, stop_reason: c.stopReason,
      ...(body.return_token_ids ? { token_ids: c.tokens, prompt_token_ids: plan.prompts[c.promptIndex] } : {}),
    })),
    usage,
  });
}

async function chatCompletions(opts: ServeOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = parseRequest(ChatCompletionRequest, await readJson(req, opts.maxBodyBytes));
  if (body.top_logprobs) throw new ApiError(400, 'top_logprobs > 0 is not available from this sampler; use logprobs: true alone for the sampled tokens\' log-probabilities', 'invalid_request_error', 'top_logprobs');
  const model = await opts.registry.resolve(body.model);
  const prompt = chatPrompt(body);
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  const plan = planSampling({ ...body, max_tokens: maxTokens }, [prompt], model.maxContext, (len) => model.maxContext - len, opts.maxRowsPerRequest);
  const choices = toChoices(plan, await model.generate(plan.requests));
  const asIds = body.return_tokens_as_token_ids ?? false;
  const id = `chatcmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const usage = usageOf(plan.prompts, choices);
  if (body.stream) {
    startStream(res);
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => event(res, { id, object: 'chat.completion.chunk', created, model: body.model, choices, ...extra });
    for (const c of choices) {
      chunk([{ index: c.index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
      const pieces = tokenPieces(c.tokens);
      let sent = 0;
      c.tokens.forEach((t, i) => {
        const content = pieces[i].slice(0, Math.max(0, c.text.length - sent));
        sent += content.length;
        chunk([{ index: c.index, delta: { content }, logprobs: body.logprobs ? chatLogprobs({ tokens: [t], logprobs: [c.logprobs[i]] }, asIds) : null, finish_reason: null, ...(body.return_token_ids ? { token_ids: [t] } : {}) }]);
      });
      chunk([{ index: c.index, delta: {}, logprobs: null, finish_reason: c.finishReason, stop_reason: c.stopReason }], body.return_token_ids ? { prompt_token_ids: prompt } : {});
    }
    if (body.stream_options?.include_usage) chunk([], { usage });
    return endStream(res);
  }
  sendJson(res, 200, {
    id, object: 'chat.completion', created, model: body.model,
    choices: choices.map((c) => ({
      index: c.index, message: { role: 'assistant', content: c.text }, logprobs: body.logprobs ? chatLogprobs(c, asIds) : null, finish_reason: c.finishReason, stop_reason: c.stopReason,
      ...(body.return_token_ids ? { token_ids: c.tokens } : {}),
    })),
    usage,
    ...(body.return_token_ids ? { prompt_token_ids: prompt } : {}),
  });
}

function usageOf(prompts: number[][], choices: ChoiceOut[]): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const prompt_tokens = prompts.reduce((a, p) => a + p.length, 0);
  const completion_tokens = choices.reduce((a, c) => a + c.tokens.length, 0);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** Per-token text pieces of a completion (a streaming UTF-8 decoder; special tokens add no text). */
function tokenPieces(tokens: number[]): string[] {
  const decoder = new TextDecoder();
  return tokens.map((t) => (t < 256 ? decoder.decode(Uint8Array.of(t), { stream: true }) : ''));
}

function startStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
}

function event(res: ServerResponse, data: unknown): void {
  res.write(`data: ${JSON.stringify(data)}\n\n`);
}

function endStream(res: ServerResponse): void {
  res.end('data: [DONE]\n\n');
}

/** Starts listening; resolves with the server and its bound address. */
export async function startServer(opts: ServeOptions): Promise<{ server: Server; url: string }> {
  const server = createServer(createServeHandler(opts));
  // Keep-alive connections from a client pool should not outlive a stopped server by much.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return { server, url: `http://${host}:${addr.port}` };
}
