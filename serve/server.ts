// `whale serve`'s HTTP layer (node:http): routes, bearer-key check, body limits, JSON and SSE responses,
// and generation tied to the client's connection (a client that leaves stops its rows). Errors always have
// OpenAI's shape {error: {message, type, param, code}} and a matching status code; no request ends the process.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { answerClientError, answerOnSocket, checkBind, checkJsonBody, clip, decodeSegment, requestPath } from './http-guards';
import { ApiError, ChatCompletionRequest, CompletionRequest, parseRequest } from './openai-schema';
import { chatLogprobs, chatPrompt, completionLogprobs, completionPrompts, planSampling, toChoices, type ChoiceOut, type SamplingPlan } from './generation';
import { WithdrawnError, type ModelRegistry, type ServedModel } from './model-registry';
import type { GenerateResult } from '../model';

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
  /** Serve on a non-loopback host with no apiKey (refused otherwise). */
  insecureNoAuth?: boolean;
  /** Generation events (the CLI logs `client-gone`; tests observe cancellation through them). */
  onEvent?: (e: ServeEvent) => void;
}

/**
 * `generating`: a request's rows go to the sampler. `client-gone`: its client disconnected before the answer,
 * so its rows were withdrawn (`queued`: before the sampler took them); `tokens` were generated before they stopped.
 */
export type ServeEvent =
  | { kind: 'generating'; route: string; rows: number; maxTokens: number }
  | { kind: 'client-gone'; route: string; rows: number; cancelledRows: number; tokens: number; queued: boolean };

/** Per-request context the endpoints share. */
interface Call {
  opts: ServeOptions;
  req: IncomingMessage;
  res: ServerResponse;
  /** Aborts when the client goes away before its answer is complete. */
  signal: AbortSignal;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(req: IncomingMessage, res: ServerResponse, err: unknown): void {
  const api = err instanceof ApiError ? err : new ApiError(500, `internal error: ${err instanceof Error ? err.message : String(err)}`, 'server_error');
  if (res.destroyed || res.writableEnded) return; // the client is gone: nobody to tell
  // A body left unread (refused before or while reading it) is not drained: the connection closes instead.
  if (!req.complete && !res.headersSent) res.setHeader('connection', 'close');
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
  const routes: Record<string, Record<string, (call: Call) => Promise<void>>> = {
    '/v1/models': { GET: async ({ res }) => sendJson(res, 200, { object: 'list', data: opts.registry.listed().map(modelCard) }) },
    '/v1/completions': { POST: completions },
    '/v1/chat/completions': { POST: chatCompletions },
    '/health': { GET: async ({ res }) => sendJson(res, 200, { status: 'ok' }) },
  };
  return (req, res) => {
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    // Everything, the request target included, is parsed inside the promise: a throw becomes a response.
    const run = async () => {
      // HTTP/1.1 requires Host; node's own check would answer outside OpenAI's error shape, so it is done here.
      if (req.httpVersion === '1.1' && req.headers.host === undefined) throw new ApiError(400, 'the request has no Host header, which HTTP/1.1 requires: send `Host: <server address>`', 'invalid_request_error', null, 'bad_http_request');
      const pathname = requestPath(req.url);
      if (pathname !== '/health') checkAuth(req, opts.apiKey);
      const card = /^\/v1\/models\/(.+)$/.exec(pathname);
      if (card && req.method === 'GET') {
        const model = await opts.registry.resolve(decodeSegment(card[1], 'model'));
        return sendJson(res, 200, { ...modelCard(model.id), max_model_len: model.maxContext });
      }
      const route = Object.hasOwn(routes, pathname) ? routes[pathname] : undefined;
      if (!route) throw new ApiError(404, `Unknown route ${req.method} ${clip(pathname)}: this server answers /v1/models, /v1/completions and /v1/chat/completions.`, 'not_found_error', null, 'unknown_url');
      const handler = Object.hasOwn(route, req.method ?? '') ? route[req.method ?? ''] : undefined;
      if (!handler) {
        res.setHeader('allow', Object.keys(route).join(', '));
        throw new ApiError(405, `Method ${req.method} is not allowed on ${pathname}; use ${Object.keys(route).join(' or ')}.`, 'invalid_request_error', null, 'method_not_allowed');
      }
      await handler({ opts, req, res, signal: gone.signal });
    };
    run().catch((err) => {
      try {
        sendError(req, res, err);
      } catch {
        res.destroy(); // even the error answer failed: drop this connection, keep the server
      }
    });
  };
}

function modelCard(id: string): Record<string, unknown> {
  return { id, object: 'model', created: 0, owned_by: 'whale' };
}

/**
 * Runs a plan's rows with the client's connection as their cancel signal. Null when the client left: its rows
 * were dropped from the queue or stopped at the next decode step, and there is no one to answer.
 */
async function generateFor(call: Call, route: string, model: ServedModel, plan: SamplingPlan): Promise<GenerateResult[] | null> {
  const rows = plan.requests.length;
  call.opts.onEvent?.({ kind: 'generating', route, rows, maxTokens: plan.requests.reduce((a, r) => a + r.maxNewTokens, 0) });
  let results: GenerateResult[];
  try {
    results = await model.generate(plan.requests, call.signal);
  } catch (err) {
    if (!(err instanceof WithdrawnError)) throw err;
    call.opts.onEvent?.({ kind: 'client-gone', route, rows, cancelledRows: rows, tokens: 0, queued: true });
    return null;
  }
  if (!call.signal.aborted) return results;
  const cancelledRows = results.filter((r) => r.cancelled).length;
  call.opts.onEvent?.({ kind: 'client-gone', route, rows, cancelledRows, tokens: results.reduce((a, r) => a + r.tokens.length, 0), queued: false });
  return null;
}

async function completions(call: Call): Promise<void> {
  const { opts, req, res } = call;
  checkJsonBody(req);
  const body = parseRequest(CompletionRequest, await readJson(req, opts.maxBodyBytes));
  if (body.logprobs) throw new ApiError(400, 'logprobs > 0 (top alternatives) is not available from this sampler; use logprobs: 0 for the sampled tokens\' log-probabilities', 'invalid_request_error', 'logprobs');
  const model = await opts.registry.resolve(body.model);
  const plan = planSampling(body, completionPrompts(body), model.maxContext, () => 16, opts.maxRowsPerRequest);
  const results = await generateFor(call, '/v1/completions', model, plan);
  if (!results) return;
  const choices = toChoices(plan, results);
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

async function chatCompletions(call: Call): Promise<void> {
  const { opts, req, res } = call;
  checkJsonBody(req);
  const body = parseRequest(ChatCompletionRequest, await readJson(req, opts.maxBodyBytes));
  if (body.top_logprobs) throw new ApiError(400, 'top_logprobs > 0 is not available from this sampler; use logprobs: true alone for the sampled tokens\' log-probabilities', 'invalid_request_error', 'top_logprobs');
  const model = await opts.registry.resolve(body.model);
  const prompt = chatPrompt(body);
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  const plan = planSampling({ ...body, max_tokens: maxTokens }, [prompt], model.maxContext, (len) => model.maxContext - len, opts.maxRowsPerRequest, 'messages');
  const results = await generateFor(call, '/v1/chat/completions', model, plan);
  if (!results) return;
  const choices = toChoices(plan, results);
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

/**
 * Starts listening; resolves with the server, its bound address and the bind warning to print (null if none).
 * A non-loopback host needs an apiKey or insecureNoAuth (checkBind throws otherwise).
 */
export async function startServer(opts: ServeOptions): Promise<{ server: Server; url: string; warning: string | null }> {
  const warning = checkBind(opts.host, opts.apiKey, opts.insecureNoAuth ?? false);
  const server = createServer({ requireHostHeader: false }, createServeHandler(opts));
  server.on('clientError', answerClientError);
  // node's own answers to these are bare status lines; here they carry OpenAI's error shape too.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    sendError(req, res, new ApiError(417, `Expect: ${clip(req.headers.expect ?? '')} cannot be met: only \`Expect: 100-continue\` is supported`, 'invalid_request_error', null, 'expectation_failed'));
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => answerOnSocket(socket, new ApiError(405, 'CONNECT is not supported: this is an API server, not a proxy', 'invalid_request_error', null, 'method_not_allowed')));
  // Keep-alive connections from a client pool should not outlive a stopped server by much.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return { server, url: `http://${host}:${addr.port}`, warning };
}
