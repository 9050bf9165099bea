// Rollouts from a real `transformers serve` (CPU, offline) on a tiny random Qwen2 model made in the test, and
// the reference trainer's new folder served by path on its first request: the OpenAI backend's
// transformers-serve dialect sends only the fields that server takes (the vllm dialect's extensions get 422),
// one request per sample with its own seed, top_k inside a generation_config, stop strings found in the text.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { renderChatPrompt, SPECIAL_TOKENS, type GenerateRequest } from '../../model';
import { OpenAIRolloutConfig } from '../../backends/config';
import { OpenAIBackend } from '../../backends/openai-backend';
import { sha256Hex } from '../../store/artifact-store';
import { ROOT, waitFor } from '../workflows/env';
import { HF_PYTHON, TRAINER, hfSkipReason, run } from './hf-env';

const skip = hfSkipReason();
// One compute thread: on a loaded 2-core machine a second OpenMP thread mostly spins.
const OFFLINE = { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_NO_ADVISORY_WARNINGS: '1', OMP_NUM_THREADS: '1' };
let dir: string;
let folder: string;
let baseUrl: string;
let server: ChildProcess | undefined;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function backend(dialect: 'transformers-serve' | 'vllm', model: string): OpenAIBackend {
  const config = OpenAIRolloutConfig.parse({ kind: 'openai', baseUrl, api: 'chat', tokenizer: dialect === 'vllm' ? 'project' : 'foreign', dialect, maxContext: 2048, maxConcurrency: 1, maxRetries: 0 });
  return new OpenAIBackend({ config, model, maxContext: 2048 });
}

function request(seed: number, extra: Partial<GenerateRequest> = {}): GenerateRequest {
  return { promptTokens: renderChatPrompt([{ role: 'user', content: 'What is 3 + 4?' }]), maxNewTokens: 12, temperature: 1, topK: 20, topP: 1, stopTokens: [SPECIAL_TOKENS.END], seed, ...extra };
}

before(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(tmpdir(), 'whale-hf-serve-'));
  folder = path.join(dir, 'qwen2-tiny');
  const made = await run([HF_PYTHON, path.join(ROOT, 'trainers', 'hf', 'tiny_model.py'), folder], undefined, OFFLINE);
  assert.equal(made.code, 0, made.stderr);
  const port = await freePort();
  // Its own process group: the server's workers go down with it.
  server = spawn(path.join(path.dirname(HF_PYTHON), 'transformers'), ['serve', '--host', '127.0.0.1', '--port', String(port), '--device', 'cpu'], { cwd: dir, env: OFFLINE, stdio: 'ignore', detached: true });
  baseUrl = `http://127.0.0.1:${port}/v1`;
  await waitFor('transformers serve to answer /health', async () => (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) || undefined, 120_000);
});
after(async () => {
  if (server?.pid && server.exitCode === null) {
    const exited = new Promise((r) => server?.once('exit', r));
    process.kill(-server.pid, 'SIGTERM');
    await exited;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('rollouts from transformers serve', { skip }, () => {
  it('samples one request per seed (reproducible one at a time), cuts at stop strings, and refuses vLLM fields', async () => {
    const b = backend('transformers-serve', folder);
    const [a, bb, c] = await b.generate([request(1), request(2), request(3)]);
    const [again] = await b.generate([request(1)]);
    assert.equal(again.text, a.text, 'the same seed, one request at a time, gives the same sample');
    assert.ok(new Set([a.text, bb.text, c.text]).size >= 2, 'different seeds give different samples');
    for (const r of [a, bb, c]) assert.ok(r.tokens.length > 0 && r.tokens.length === r.logprobs.length);
    // A stop string taken from the unconstrained sample: the sample ends right after its first occurrence.
    const word = /[A-Za-z]{3,}/.exec(a.text)?.[0] ?? /\S{2}/.exec(a.text)?.[0];
    assert.ok(word, `the sample has some text to stop at: ${JSON.stringify(a.text)}`);
    const [cut] = await b.generate([request(1, { stopStrings: [word] })]);
    assert.equal(cut.stopReason, 'stop-string');
    assert.equal(cut.text, a.text.slice(0, a.text.indexOf(word) + word.length));
    // The vllm dialect's extensions (top_k, return_token_ids, ...) are refused by this strict server.
    await assert.rejects(backend('vllm', folder).generate([request(1)]), /HTTP 422.*Unexpected fields/);
  });

  it('serves the reference trainer\'s new checkpoint folder by its path (ChatML template, Qwen2)', async () => {
    const lines = Array.from({ length: 4 }, (_, i) => JSON.stringify({ id: `t${i}/0`, messages: [{ role: 'user', content: `What is ${i} + 4?` }, { role: 'assistant', content: `<calc>${i}+4</calc>` }], loss_mask: [0, 1] }));
    const data = lines.join('\n') + '\n';
    writeFileSync(path.join(dir, 'dataset.jsonl'), data);
    const req = {
      protocol: 'whale-external-trainer/1', run_id: 'serve', step: 0, seed: 1, deterministic: true,
      dataset: { path: path.join(dir, 'dataset.jsonl'), sha256: sha256Hex(data), records: 4 },
      base_checkpoint: { ref: { kind: 'checkpoint', uri: 'pointer', sha256: '0'.repeat(64), bytes: 1 }, path: null, model: folder },
      hyperparameters: { learning_rate: 1e-3, minibatch_size: 2, weight_decay: 0.1, clip_norm: 1, epochs: 1 }, output_dir: path.join(dir, 'out'),
    };
    const trained = await run([HF_PYTHON, TRAINER, '--threads', '1'], JSON.stringify(req), OFFLINE);
    assert.equal(trained.code, 0, trained.stderr);
    const response = JSON.parse(trained.stdout.trim().split('\n').pop() as string) as { checkpoint: { model: string }; metrics: { minibatches: number; trained_tokens: number } };
    assert.equal(response.metrics.minibatches, 2);
    assert.ok(response.metrics.trained_tokens > 0);
    const [sample] = await backend('transformers-serve', response.checkpoint.model).generate([request(4)]);
    assert.ok(sample.tokens.length > 0, 'the new folder loads and samples');
  });
});
