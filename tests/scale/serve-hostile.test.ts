// `whale serve` under hostile input: malformed request lines and targets sent as raw bytes (node:net), bad
// bodies, content types, methods and headers, oversized prompts; each gets a 4xx in OpenAI's error shape and
// the server keeps answering. A client that disconnects stops its generation; a network bind needs a key.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import type { Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { decodeCheckpoint, OrtSampler, renderChatPrompt, SPECIAL_TOKENS, type GenerateRequest } from '../../model';
import { ModelRegistry } from '../../serve/model-registry';
import { startServer, type ServeEvent } from '../../serve/server';
import { ROOT } from '../workflows/env';

const CKPT = path.join(ROOT, 'data', 'base-policies', 'math.ckpt');
const KEY = 'hostile-key-42';
let registry: ModelRegistry;
let server: Server;
let port = 0;
const events: ServeEvent[] = [];
const waiters: Array<() => void> = [];

before(async () => {
  registry = new ModelRegistry({ checkpointFile: CKPT, name: 'math', threads: 1, maxBatchRows: 64, maxLoaded: 2 });
  await registry.start();
  let url: string;
  ({ server, url } = await startServer({
    registry, host: '127.0.0.1', port: 0, apiKey: KEY, maxBodyBytes: 1 << 20, maxRowsPerRequest: 64,
    onEvent: (e) => {
      events.push(e);
      for (const w of waiters.splice(0)) w();
    },
  }));
  port = Number(new URL(url).port);
});
after(async () => {
  server?.close();
  server?.closeAllConnections();
  await registry?.close();
});

/** Resolves with the first event (from index `from` on) that matches. */
function nextEvent(from: number, match: (e: ServeEvent) => boolean): Promise<ServeEvent> {
  return new Promise((resolve) => {
    const look = () => {
      const hit = events.slice(from).find(match);
      if (hit) resolve(hit);
      else waiters.push(look);
    };
    look();
  });
}

interface RawAnswer { status: number; headers: string; body: string; json: Record<string, unknown> | null }

/** Sends bytes as they are and reads until the server closes the connection. */
function raw(bytes: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('data', (d) => chunks.push(d));
    s.on('error', reject);
    s.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const headers = text.slice(0, split);
      const body = text.slice(split + 4);
      let json: Record<string, unknown> | null = null;
      try {
        json = JSON.parse(body) as Record<string, unknown>;
      } catch {
        // not JSON: the assertion below says so
      }
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0), headers, body, json });
    });
    // Written, not half-closed: node treats a client's FIN as the client leaving (its answer is dropped).
    s.write(bytes);
  });
}

/** A request with Connection: close, an auth header and, for a body, its Content-Length. */
function request(method: string, target: string, body = '', extra: Record<string, string> = {}): string {
  const headers: Record<string, string> = { host: 'whale.test', connection: 'close', authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}), ...extra };
  return `${method} ${target} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`;
}

function assertOpenAIError(r: RawAnswer, status: number, code?: string): void {
  assert.equal(r.status, status, `status (body: ${r.body.slice(0, 300)})`);
  const e = r.json?.error as Record<string, unknown> | undefined;
  assert.ok(e, `OpenAI error shape expected, got: ${r.body.slice(0, 300)}`);
  assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'param', 'type']);
  assert.ok(typeof e.message === 'string' && e.message.length > 0 && e.message.length < 2000, `a short message: ${String(e.message).slice(0, 300)}`);
  assert.equal(e.type, status === 401 ? 'authentication_error' : status === 404 ? 'not_found_error' : 'invalid_request_error');
  if (code) assert.equal(e.code, code);
  assert.match(r.headers, /content-type: application\/json/i);
}

/** The server still answers (a fresh connection). */
async function assertUp(): Promise<void> {
  const r = await raw(request('GET', '/health'));
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(r.json, { status: 'ok' });
}

const completion = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: 'math', prompt: 'What is 2+3?', max_tokens: 4, seed: 1, ...extra });

/** [name, bytes, expected status, expected code]: every case is one test, followed by a health check. */
const CASES: Array<[string, () => string | Buffer, number, string?]> = [
  // The reported ones.
  ['absolute-form target with a bad host (http://[/health)', () => 'GET http://[/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400, 'invalid_request_target'],
  ['absolute-form target with port 99999', () => 'GET http://a:99999/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400, 'invalid_request_target'],
  ['malformed percent-encoding in a model name (/v1/models/%E0%A4%A)', () => request('GET', '/v1/models/%E0%A4%A'), 400, 'invalid_path_encoding'],
  ['a 200 KB chat message', () => request('POST', '/v1/chat/completions', JSON.stringify({ model: 'math', messages: [{ role: 'user', content: 'a'.repeat(200_000) }] })), 400, 'context_length_exceeded'],
  ['a 900 KB string prompt', () => request('POST', '/v1/completions', JSON.stringify({ model: 'math', prompt: 'b'.repeat(900_000) })), 400, 'context_length_exceeded'],
  ['a body that is not JSON', () => request('POST', '/v1/completions', '{"model": "math", "prompt": '), 400, 'invalid_json'],
  ['Content-Type text/plain', () => request('POST', '/v1/completions', completion(), { 'content-type': 'text/plain' }), 415, 'unsupported_media_type'],
  ['a method the route does not take (DELETE /v1/completions)', () => request('DELETE', '/v1/completions'), 405, 'method_not_allowed'],
  ['a method token HTTP does not know (BREW)', () => request('BREW', '/health'), 400, 'bad_http_request'],
  ['headers over 16 KiB', () => request('GET', '/health', '', { 'x-pad': 'p'.repeat(20_000) }), 431, 'bad_http_request'],
  // Our own: the same causes reached other ways.
  ['a 900 KB prompt of token ids', () => request('POST', '/v1/completions', JSON.stringify({ model: 'math', prompt: new Array(300_000).fill(7) })), 400, 'context_length_exceeded'],
  ['30,000 empty chat messages', () => request('POST', '/v1/chat/completions', JSON.stringify({ model: 'math', messages: new Array(30_000).fill({ role: 'user', content: '' }) })), 400, 'context_length_exceeded'],
  ['a request line that is not HTTP', () => 'HELLO\r\n\r\n', 400, 'bad_http_request'],
  ['HTTP/1.1 without a Host header', () => 'GET /health HTTP/1.1\r\nConnection: close\r\n\r\n', 400, 'bad_http_request'],
  ['asterisk-form target (OPTIONS *)', () => 'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400, 'invalid_request_target'],
  ['absolute-form with another scheme (ftp://)', () => 'GET ftp://x/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400, 'invalid_request_target'],
  ['a control byte in the target', () => 'GET /hea\x01lth HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400, 'bad_http_request'],
  ['Content-Length and Transfer-Encoding together', () => `POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400, 'bad_http_request'],
  ['a Content-Length that is not a number', () => 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: abc\r\n\r\n', 400, 'bad_http_request'],
  ['a chunked body over the limit (no Content-Length)', () => {
    const chunk = 'c'.repeat(256 * 1024);
    const head = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    return head + `${chunk.length.toString(16)}\r\n${chunk}\r\n`.repeat(5) + '0\r\n\r\n';
  }, 413, 'request_too_large'],
  ['a gzip Content-Encoding', () => request('POST', '/v1/completions', completion(), { 'content-encoding': 'gzip' }), 415, 'unsupported_media_type'],
  ['a form body (curl -d without -H)', () => request('POST', '/v1/completions', completion(), { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type'],
  ['JSON nested 200,000 deep', () => request('POST', '/v1/completions', '['.repeat(200_000) + ']'.repeat(200_000)), 400],
  ['a __proto__ key in the body', () => request('POST', '/v1/completions', '{"model":"math","prompt":"x","__proto__":{"admin":true}}'), 400, 'unrecognized_argument'],
  ['a 500 KB model name', () => request('POST', '/v1/completions', completion({ model: 'm'.repeat(500_000) })), 404, 'model_not_found'],
  ['a traversal-looking model name in the path', () => request('GET', '/v1/models/..%2F..%2Fetc%2Fpasswd'), 404, 'model_not_found'],
  ['a 10 KB wrong bearer key', () => request('GET', '/v1/models', '', { authorization: `Bearer ${'k'.repeat(10_000)}` }), 401, 'invalid_api_key'],
  ['an Expect header the server cannot meet', () => request('POST', '/v1/completions', completion(), { expect: 'teapot' }), 417, 'expectation_failed'],
  ['a CONNECT request', () => 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405, 'method_not_allowed'],
  ['n, seed and max_tokens of the wrong kinds', () => request('POST', '/v1/completions', completion({ n: '5', seed: 1.5, max_tokens: -1 })), 400, 'invalid_value'],
  ['a path of 8 KB', () => request('GET', `/${'x'.repeat(8000)}`), 404, 'unknown_url'],
];

describe('whale serve survives hostile requests', () => {
  for (const [name, bytes, status, code] of CASES) {
    // A timeout: on a server that crashed or never answered, the socket stays open and the case would hang.
    it(`${name}: ${status}`, { timeout: 30_000 }, async () => {
      assertOpenAIError(await raw(bytes()), status, code);
      await assertUp();
    });
  }

  it('a body cut off mid-way by a closing client leaves the server up', async () => {
    const s = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => s.once('connect', () => resolve()));
    s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`);
    s.destroy();
    await assertUp();
  });

  it('a bad request pipelined after a good one gets its own 4xx on the same connection', async () => {
    const r = await raw(request('GET', '/health', '', { connection: 'keep-alive' }) + 'GET http://[/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.equal(r.status, 200);
    assert.match(r.body, /HTTP\/1\.1 400 [^]*"code":"invalid_request_target"/);
    await assertUp();
  });

  it('a WebSocket upgrade request is answered as plain HTTP (a client cannot insist on an upgrade)', async () => {
    const r = await raw(request('GET', '/v1/models', '', { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' }));
    assert.equal(r.status, 200, r.body);
    await assertUp();
  });

  it('a lone surrogate in a prompt is generated for, not a crash', async () => {
    const r = await raw(request('POST', '/v1/completions', '{"model":"math","prompt":"\\ud800 2+3=","max_tokens":3,"seed":4}'));
    assert.equal(r.status, 200, r.body);
    assert.equal((r.json?.choices as unknown[]).length, 1);
  });

  it('still generates after all of the above', async () => {
    const r = await raw(request('POST', '/v1/chat/completions', JSON.stringify({ model: 'math', messages: [{ role: 'user', content: 'What is 2+3?' }], max_tokens: 6, seed: 2 })));
    assert.equal(r.status, 200, r.body);
    assert.equal((r.json?.usage as { completion_tokens: number }).completion_tokens > 0, true);
  });
});

describe('a client that disconnects stops its generation', () => {
  // 64 rows that would each run to the context's end (ignore_eos): many seconds of decoding if left alone.
  const long = (seed: number) => JSON.stringify({ model: 'math', prompt: 'What is 2+3?', max_tokens: 1000, n: 64, ignore_eos: true, seed });
  const send = (body: string) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    s.write(request('POST', '/v1/completions', body));
    return s;
  };

  it('mid-generation: its rows stop at the next decode step', { timeout: 120_000 }, async () => {
    const from = events.length;
    const client = send(long(9));
    const started = await nextEvent(from, (e) => e.kind === 'generating');
    assert.equal(started.kind === 'generating' && started.maxTokens, 64 * 1000);
    client.destroy();
    const gone = await nextEvent(from, (e) => e.kind === 'client-gone');
    assert.ok(gone.kind === 'client-gone');
    assert.equal(gone.queued, false, 'the sampler had the rows');
    assert.equal(gone.cancelledRows, 64, 'every row was withdrawn');
    assert.ok(gone.tokens < 64 * 1000, `stopped early: ${gone.tokens} of ${64 * 1000} tokens generated`);
    process.stdout.write(`# disconnect mid-generation: ${gone.tokens} of ${64 * 1000} tokens generated before the rows stopped\n`);
    await assertUp();
  });

  it('queued behind another request: dropped before any of its rows is decoded', { timeout: 120_000 }, async () => {
    const from = events.length;
    const first = send(long(10));
    await nextEvent(from, (e) => e.kind === 'generating');
    const fromSecond = events.length;
    const second = send(long(11));
    // The first request holds the sampler, so the second waits in the batcher's queue.
    await nextEvent(fromSecond, (e) => e.kind === 'generating');
    second.destroy();
    const goneSecond = await nextEvent(fromSecond, (e) => e.kind === 'client-gone');
    assert.ok(goneSecond.kind === 'client-gone' && goneSecond.queued && goneSecond.tokens === 0, JSON.stringify(goneSecond));
    first.destroy();
    const goneFirst = await nextEvent(fromSecond, (e) => e.kind === 'client-gone' && e !== goneSecond);
    assert.ok(goneFirst.kind === 'client-gone' && !goneFirst.queued && goneFirst.tokens < 64 * 1000, JSON.stringify(goneFirst));
    // The sampler is free again: a small request is answered.
    const r = await raw(request('POST', '/v1/completions', completion()));
    assert.equal(r.status, 200, r.body);
  });

  it('withdrawing one request leaves the other rows of its batch exactly as they would be alone', { timeout: 120_000 }, async () => {
    const sampler = await OrtSampler.fromCheckpoint(decodeCheckpoint(readFileSync(CKPT)), { threads: 1 });
    try {
      const rows = (seed: number, n: number): GenerateRequest[] => Array.from({ length: n }, (_, i) => ({
        promptTokens: renderChatPrompt([{ role: 'user', content: `What is ${seed}+${i}?` }]), maxNewTokens: 24, temperature: 1, topK: 20, topP: 1, stopTokens: [SPECIAL_TOKENS.END, SPECIAL_TOKENS.EOT], seed: seed * 100 + i,
      }));
      const [left, stays] = [rows(1, 4), rows(2, 4)];
      const alone = await sampler.generate(stays);
      const leaving = new AbortController();
      const together = sampler.generate([...left, ...stays], [...left.map(() => leaving.signal), ...stays.map(() => undefined)]);
      leaving.abort();
      const got = await together;
      assert.ok(got.slice(0, 4).every((r) => r.cancelled === true && r.tokens.length < 24), 'the withdrawn rows stopped');
      const kept = got.slice(4);
      assert.ok(kept.every((r) => r.cancelled === undefined));
      assert.deepEqual(kept.map((r) => r.tokens), alone.map((r) => r.tokens));
      assert.deepEqual(kept.map((r) => r.stopReason), alone.map((r) => r.stopReason));
      kept.forEach((r, i) => r.logprobs.forEach((lp, j) => assert.ok(Math.abs(lp - alone[i].logprobs[j]) < 1e-4, `logprob ${i}/${j}`)));
    } finally {
      await sampler.close();
    }
  });
});

/** Runs `whale serve` as its own process; resolves once it prints its URL, or with its output when it exits. */
function cli(args: string[], env: Record<string, string> = {}): Promise<{ child: ReturnType<typeof spawn>; output: string; url: string | null; code: number | null }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), 'serve', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const url = /at (http:\/\/\S+)\/v1/.exec(output)?.[1];
      if (url && /\n$/.test(output)) resolve({ child, output, url, code: null });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => resolve({ child, output, url: null, code }));
  });
}

describe('whale serve on a network address', () => {
  it('refuses a non-loopback --host without a key, before loading the checkpoint', { timeout: 120_000 }, async () => {
    const r = await cli(['no-such-file.ckpt', '--host', '0.0.0.0', '--port', '0']);
    assert.notEqual(r.code, 0);
    assert.match(r.output, /--host 0\.0\.0\.0 exposes the model to the network/);
    assert.match(r.output, /--api-key-env/);
    assert.match(r.output, /--insecure-no-auth/);
    assert.doesNotMatch(r.output, /cannot read checkpoint/);
  });

  it('starts with --insecure-no-auth, warns, and survives the request that used to end the process', { timeout: 180_000 }, async () => {
    const r = await cli([CKPT, '--host', '0.0.0.0', '--port', '0', '--threads', '1', '--insecure-no-auth']);
    assert.ok(r.url, r.output);
    try {
      assert.match(r.output, /warning: bound to 0\.0\.0\.0, reachable from the network with NO API key \(--insecure-no-auth\)/);
      const servePort = Number(new URL(r.url).port);
      const ask = (bytes: string) => new Promise<string>((resolve, reject) => {
        const s = net.connect(servePort, '127.0.0.1');
        let text = '';
        s.on('data', (d) => (text += d.toString()));
        s.on('error', reject);
        s.on('close', () => resolve(text));
        s.write(bytes);
      });
      assert.match(await ask('GET http://[/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 400 [^]*"code":"invalid_request_target"/);
      assert.match(await ask('GET http://a:99999/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 400 /);
      assert.equal(r.child.exitCode, null, 'still running');
      assert.match(await ask('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 200 [^]*"status":"ok"/);
    } finally {
      const exited = new Promise((resolve) => r.child.once('exit', resolve));
      r.child.kill('SIGTERM');
      await exited;
    }
  });
});
