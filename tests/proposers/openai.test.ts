// Protocol test of the OpenAI-compatible proposer against a real HTTP server (node:http on 127.0.0.1)
// that checks the request and returns a fixed completion: the fenced candidates become archive candidates.
// Also: a 429 with Retry-After is waited out and retried (the round survives); an HTTP error after the
// retries and a timeout are failed rounds, never exceptions.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseFencedCandidates } from '../../activities/proposers/openai';
import { readSeedHarness } from '../../domains/harnesses';
import { SandboxPool } from '../../harness-sandbox/pool';
import { proposeInput, setUp } from './fixtures';

const pool = new SandboxPool();
after(() => pool.close());

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

/** A server whose every request must be expected: an unexpected one is recorded and fails the test. */
async function serve(handler: Handler): Promise<{ url: string; server: Server; requests: string[]; unexpected: string[] }> {
  const requests: string[] = [];
  const unexpected: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      requests.push(body);
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        unexpected.push(`${req.method} ${req.url}`);
        res.writeHead(500).end('unexpected request');
        return;
      }
      handler(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, requests, unexpected };
}

const h0 = readSeedHarness('search-qa');
const COMPLETION = [
  'Two candidates.',
  '```harness c1',
  h0.replace("systemPrompt: 'Answer the question.'", "systemPrompt: 'Search first, then answer with the answer tag.'"),
  '```',
  '```harness c2',
  h0.replace('topK: 1, docChars: 48', 'topK: 3, docChars: 160'),
  '```',
  '```json pending_eval',
  JSON.stringify({ candidates: [
    { file: 'c1', parent: 'incoming', hypothesis: 'the model answers without searching', changes: 'system prompt', axis: 'prompt' },
    { file: 'c2', parent: 'incoming', hypothesis: 'one short passage misses the answer', changes: 'topK 1->3, docChars 48->160', axis: 'retrieval' },
  ] }),
  '```',
].join('\n');

test('OpenAI-compatible proposer (protocol test): request shape, fenced candidates into the archive, usage', async () => {
  const srv = await serve((req, body, res) => {
    const parsed = JSON.parse(body) as { model: string; messages: Array<{ role: string; content: string }> };
    assert.equal(req.headers.authorization, 'Bearer test-key-123');
    assert.equal(parsed.model, 'tiny-proposer');
    assert.equal(parsed.messages[0].role, 'system');
    assert.match(parsed.messages[0].content, /```harness c1/);
    assert.match(parsed.messages[1].content, /## incoming \(accepted\): harness\.ts/);
    assert.match(parsed.messages[1].content, /Failed trajectories of incoming/);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: COMPLETION } }], usage: { prompt_tokens: 900, completion_tokens: 300, total_tokens: 1200 } }));
  });
  const h = await setUp('search-qa', pool, { env: { WHALE_TEST_KEY: 'test-key-123' } });
  try {
    const r = await h.acts.proposeHarnesses(proposeInput(h, 'search-qa', 1, { kind: 'openai', baseUrl: srv.url, model: 'tiny-proposer', apiKeyEnv: 'WHALE_TEST_KEY', timeoutMs: 10_000 }));
    assert.deepEqual(srv.unexpected, []);
    assert.equal(srv.requests.length, 1);
    assert.equal(r.failure, null);
    assert.equal(r.cost.tokens, 1200);
    assert.deepEqual(r.candidates.map((c) => [c.name, c.axis]), [['r1-c1', 'prompt'], ['r1-c2', 'retrieval']]);
    for (const c of r.candidates) {
      const v = await h.acts.validateHarness({ runId: 'run', domain: 'search-qa', archiveKey: h.archiveKey, name: c.name, source: c.source, promptOnlyBase: null });
      assert.equal(v.valid, true, v.reason ?? '');
    }
  } finally {
    h.cleanup();
    srv.server.close();
  }
});

test('OpenAI-compatible proposer: an HTTP error or a timeout is a failed round', async () => {
  let hang: ServerResponse | null = null;
  const auth: Array<string | undefined> = [];
  const srv = await serve((req, body, res) => {
    auth.push(req.headers.authorization);
    if (JSON.parse(body).model === 'slow') hang = res; // never answered: the client's timeout must fire
    else res.writeHead(503).end('overloaded');
  });
  const h = await setUp('search-qa', pool, { env: {} });
  try {
    const e = await h.acts.proposeHarnesses(proposeInput(h, 'search-qa', 1, { kind: 'openai', baseUrl: srv.url, model: 'm', apiKeyEnv: 'NOPE', timeoutMs: 10_000, maxRetries: 1 }));
    assert.match(e.failure ?? '', /HTTP 503 \(2 attempt\(s\)\)/);
    assert.equal(srv.requests.length, 2, 'a 503 is retried once (maxRetries 1), then the round fails');
    assert.deepEqual(e.candidates, []);
    assert.deepEqual(auth, [undefined, undefined], 'no key set: no Authorization header (a local server needs none)');
    const t = await h.acts.proposeHarnesses(proposeInput(h, 'search-qa', 2, { kind: 'openai', baseUrl: srv.url, model: 'slow', apiKeyEnv: 'NOPE', timeoutMs: 300, maxRetries: 0 }));
    assert.match(t.failure ?? '', /timed out after 300 ms/);
    assert.deepEqual(t.candidates, []);
    assert.ok(hang !== null, 'the slow request reached the server');
    assert.deepEqual(srv.unexpected, []);
  } finally {
    h.cleanup();
    srv.server.closeAllConnections();
    srv.server.close();
  }
});

test('OpenAI-compatible proposer: a 429 with Retry-After is waited out and retried, so the round survives', async () => {
  const arrivals: number[] = [];
  const srv = await serve((req, body, res) => {
    arrivals.push(Date.now());
    if (arrivals.length === 1) {
      // Retry-After 1 s: longer than the client's own first backoff (at most 0.5 s), so the gap shows it was honoured.
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ error: { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: COMPLETION } }], usage: { total_tokens: 1200 } }));
  });
  const h = await setUp('search-qa', pool, { env: { WHALE_TEST_KEY: 'k' } });
  try {
    const r = await h.acts.proposeHarnesses(proposeInput(h, 'search-qa', 1, { kind: 'openai', baseUrl: srv.url, model: 'm', apiKeyEnv: 'WHALE_TEST_KEY', timeoutMs: 10_000 }));
    assert.deepEqual(srv.unexpected, []);
    assert.equal(arrivals.length, 2, 'one 429, then one retry');
    assert.ok(arrivals[1] - arrivals[0] >= 950, `the retry waited ${arrivals[1] - arrivals[0]} ms; Retry-After asked for 1000 ms`);
    assert.equal(r.failure, null);
    assert.deepEqual(r.candidates.map((c) => c.name), ['r1-c1', 'r1-c2']);
    // The round log keeps the client's account of the 429 and the retry.
    assert.match((await h.archive.readRoundFile(1, 'proposer.log')) ?? '', /failed with status 429[^\n]*retrying/);

    // The same rate limit with retries turned off loses the round: what happened before the client retried.
    arrivals.length = 0;
    const lost = await h.acts.proposeHarnesses(proposeInput(h, 'search-qa', 2, { kind: 'openai', baseUrl: srv.url, model: 'm', apiKeyEnv: 'WHALE_TEST_KEY', timeoutMs: 10_000, maxRetries: 0 }));
    assert.match(lost.failure ?? '', /HTTP 429 \(1 attempt\(s\)\)/);
    assert.deepEqual(lost.candidates, []);
  } finally {
    h.cleanup();
    srv.server.close();
  }
});

test('fenced format: harness blocks by slot, pending_eval block, other blocks ignored', () => {
  const { files, pending } = parseFencedCandidates('x\n```ts c2\nB\n```\n```python\nignored\n```\n```harness c1\nA\n```\n```json pending_eval\n{"candidates":[{"file":"c1"}]}\n```');
  assert.deepEqual([...files.entries()].sort(), [['c1', 'A\n'], ['c2', 'B\n']]);
  assert.deepEqual(pending, [{ file: 'c1' }]);
});
