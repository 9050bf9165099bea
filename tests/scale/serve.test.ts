// whale serve's API against the real sampler, in process (node:http on a free loopback port), and the
// OpenAI backend against it: exact agreement with the embedded sampler, streaming, logprobs, and the
// OpenAI error shape for every rejected request.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import type { Server } from 'node:http';
import { ModelRegistry } from '../../serve/model-registry';
import { startServer } from '../../serve/server';
import { OpenAIBackend } from '../../backends/openai-backend';
import { OpenAIRolloutConfig } from '../../backends/config';
import { decodeCheckpoint, OrtSampler, renderChatPrompt, SPECIAL_TOKENS, type GenerateRequest } from '../../model';
import { readFileSync } from 'node:fs';
import { ROOT } from '../workflows/env';

const CKPT = path.join(ROOT, 'data', 'base-policies', 'math.ckpt');
const KEY = 'test-key-123';
let registry: ModelRegistry;
let server: Server;
let url = '';
let direct: OrtSampler;

before(async () => {
  registry = new ModelRegistry({ checkpointFile: CKPT, name: 'math', threads: 1, maxBatchRows: 64, maxLoaded: 2 });
  await registry.start();
  ({ server, url } = await startServer({ registry, host: '127.0.0.1', port: 0, apiKey: KEY, maxBodyBytes: 64 * 1024, maxRowsPerRequest: 64 }));
  url += '/v1';
  direct = await OrtSampler.fromCheckpoint(decodeCheckpoint(readFileSync(CKPT)), { threads: 1 });
});
after(async () => {
  server?.close();
  server?.closeAllConnections();
  await registry?.close();
  await direct?.close();
});

const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
async function post(route: string, body: unknown, headers: Record<string, string> = auth): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
  const res = await fetch(`${url}${route}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // SSE or empty
  }
  return { status: res.status, json, text };
}

function assertError(r: { status: number; json: Record<string, unknown> }, status: number, param?: string | null, code?: string) {
  assert.equal(r.status, status, JSON.stringify(r.json));
  const e = r.json.error as { message: string; type: string; param: string | null; code: string | null };
  assert.ok(e && typeof e.message === 'string' && e.message.length > 0, `OpenAI error shape expected: ${JSON.stringify(r.json)}`);
  assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'param', 'type']);
  if (param !== undefined) assert.equal(e.param, param);
  if (code !== undefined) assert.equal(e.code, code);
}

const prompt = renderChatPrompt([{ role: 'system', content: 'Solve it. Use <calc>expression</calc> for arithmetic.' }, { role: 'user', content: 'Tom has 12 apples and buys 30 more. How many apples?' }]);
const requests: GenerateRequest[] = [0, 1, 2, 3].map((i) => ({
  promptTokens: prompt, maxNewTokens: 48, temperature: 1, topK: 20, topP: 1, stopTokens: [SPECIAL_TOKENS.END, SPECIAL_TOKENS.EOT], stopStrings: ['</calc>'], seed: 1000 + i,
}));

describe('whale serve', () => {
  it('lists its models and reports the context', async () => {
    const list = (await (await fetch(`${url}/models`, { headers: auth })).json()) as { data: Array<{ id: string }> };
    assert.ok(list.data.some((m) => m.id === 'math'));
    assert.ok(list.data.some((m) => /^ckpt-[0-9a-f]{64}$/.test(m.id)));
    const card = (await (await fetch(`${url}/models/math`, { headers: auth })).json()) as { max_model_len: number };
    assert.equal(card.max_model_len, direct.maxContext);
  });

  it('gives the OpenAI backend exactly what the embedded sampler gives (completions and chat)', async () => {
    const want = await direct.generate(requests);
    for (const api of ['completions', 'chat'] as const) {
      const backend = new OpenAIBackend({ config: OpenAIRolloutConfig.parse({ kind: 'openai', baseUrl: url, api }), model: 'math', apiKey: KEY, maxContext: direct.maxContext });
      const got = await backend.generate(requests);
      assert.deepEqual(got.map((g) => g.tokens), want.map((w) => w.tokens), `${api}: tokens`);
      assert.deepEqual(got.map((g) => g.text), want.map((w) => w.text), `${api}: text`);
      assert.deepEqual(got.map((g) => g.stopReason), want.map((w) => w.stopReason), `${api}: stop reasons`);
      got.forEach((g, i) => g.logprobs.forEach((lp, j) => assert.ok(Math.abs(lp - want[i].logprobs[j]) < 1e-4, `${api}: logprob ${i}/${j}`)));
    }
  });

  it('streams the same text it returns, then [DONE]', async () => {
    const body = { model: 'math', messages: [{ role: 'user', content: 'What is 2+3?' }], max_tokens: 24, seed: 7, logprobs: true };
    const plain = await post('/chat/completions', body);
    const content = ((plain.json.choices as Array<{ message: { content: string } }>)[0]).message.content;
    const streamed = await post('/chat/completions', { ...body, stream: true, stream_options: { include_usage: true } });
    const events = streamed.text.split('\n\n').filter((e) => e.startsWith('data: '));
    assert.equal(events[events.length - 1], 'data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { choices: Array<{ delta?: { content?: string }; finish_reason: string | null }>; usage?: unknown });
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), content);
    assert.ok(chunks.some((c) => c.choices[0]?.finish_reason === 'length' || c.choices[0]?.finish_reason === 'stop'));
    assert.ok(chunks[chunks.length - 1].usage, 'include_usage adds a usage chunk');
  });

  it('answers completions with token ids and logprobs', async () => {
    const r = await post('/completions', { model: 'math', prompt, max_tokens: 8, seed: 3, logprobs: 0, return_token_ids: true, n: 2 });
    assert.equal(r.status, 200, r.text);
    const choices = r.json.choices as Array<{ token_ids: number[]; prompt_token_ids: number[]; logprobs: { token_logprobs: number[]; tokens: string[] } }>;
    assert.equal(choices.length, 2);
    for (const c of choices) {
      assert.deepEqual(c.prompt_token_ids, prompt);
      assert.equal(c.logprobs.token_logprobs.length, c.token_ids.length);
      assert.ok(c.logprobs.token_logprobs.every((x) => x <= 0));
    }
    assert.deepEqual(r.json.usage, { prompt_tokens: prompt.length, completion_tokens: choices[0].token_ids.length + choices[1].token_ids.length, total_tokens: prompt.length + choices[0].token_ids.length + choices[1].token_ids.length });
  });

  it('rejects bad requests with the OpenAI error shape and status', async () => {
    assertError(await post('/completions', { model: 'math', prompt: 'x' }, { 'content-type': 'application/json' }), 401, null, 'invalid_api_key');
    assertError(await post('/completions', { model: 'math', prompt: 'x' }, { ...auth, authorization: 'Bearer wrong' }), 401, null, 'invalid_api_key');
    assertError(await post('/completions', '{"model": "math", "prompt": '), 400, null, 'invalid_json');
    assertError(await post('/completions', [1, 2]), 400);
    assertError(await post('/completions', { model: 'math', prompt: 'x', bogus: 1 }), 400, 'bogus', 'unrecognized_argument');
    assertError(await post('/completions', { model: 'math', prompt: 'x', temperature: -1 }), 400, 'temperature');
    assertError(await post('/completions', { model: 'math', prompt: 'x', logprobs: 2 }), 400, 'logprobs');
    assertError(await post('/completions', { model: 'math', prompt: 'x', max_tokens: 5000 }), 400, 'max_tokens', 'context_length_exceeded');
    assertError(await post('/completions', { model: 'math', prompt: [300] }), 400, 'prompt');
    assertError(await post('/completions', { model: 'nope', prompt: 'x' }), 404, 'model', 'model_not_found');
    assertError(await post('/completions', { model: `ckpt-${'0'.repeat(64)}`, prompt: 'x' }), 404, 'model', 'model_not_found');
    assertError(await post('/chat/completions', { model: 'math', messages: [] }), 400, 'messages');
    assertError(await post('/completions', { model: 'math', prompt: 'x'.repeat(70 * 1024) }), 413, null, 'request_too_large');
    assertError(await post('/nothing', {}), 404, null, 'unknown_url');
    const get = await fetch(`${url}/completions`, { headers: auth });
    assertError({ status: get.status, json: (await get.json()) as Record<string, unknown> }, 405, null, 'method_not_allowed');
  });

  it('maps a foreign tokenizer\'s text to project byte ids', async () => {
    const backend = new OpenAIBackend({ config: OpenAIRolloutConfig.parse({ kind: 'openai', baseUrl: url, api: 'chat', tokenizer: 'foreign' }), model: 'math', apiKey: KEY, maxContext: direct.maxContext });
    const [got] = await backend.generate([requests[0]]);
    const [want] = await direct.generate([requests[0]]);
    // The server's text for a foreign model carries no special tokens; <|end|> comes back when it stopped on its own.
    assert.equal(got.text.replace('<|end|>', ''), want.text.replace('<|end|>', ''));
    assert.equal(got.tokens.length, got.logprobs.length);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum(got.logprobs) - sum(want.logprobs)) < 1e-3, 'the reply\'s total logprob is kept');
  });
});
