// The Hugging Face reference trainer (trainers/hf) behind the external-trainer protocol: a fine-tune step on
// the HF export of the committed math base policy (a pointer a run can start from; pointer in, pointer out)
// trains the same minibatches to the same losses and weights as the project's own trainer; equal deterministic
// requests give byte-equal safetensors (command and HTTP); a repeat returns the stored result; LoRA is merged
// into a new folder, or (adapter mode) written as an adapter the next step trains on.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DirectoryArtifactStore, sha256Hex } from '../../store/artifact-store';
import { decodeCheckpoint, encodeCheckpoint, encodeText, paramLayout, renderChatPrompt, SPECIAL_TOKENS } from '../../model';
import { exportHfFolder, importHfFolder } from '../../model/checkpoints/hf-folder';
import { decodeSafetensors } from '../../model/checkpoints/safetensors';
import { createExternalFineTune, runExternalFineTuneStep } from '../../backends/external-fine-tune';
import { createEmbeddedSampler } from '../../backends/embedded-sampler';
import { readCheckpointPointer } from '../../backends/checkpoint-pointer';
import { storeHfPointer } from '../../cli/hf-command';
import { createModelActivities } from '../../activities/model-activities';
import { getDomain } from '../../domains/registry';
import { readSeedHarness } from '../../domains/harnesses';
import { trainFromRequest } from '../../backends/project-trainer';
import type { DatasetRecord, TrainRequest } from '../../backends/trainer-protocol';
import type { FineTuneStepInput, FineTuneStepResult } from '../../activities/types';
import { ROOT, waitFor } from '../workflows/env';
import { HF_PYTHON, TRAINER, hfSkipReason, run } from './hf-env';

const MATH = path.join(ROOT, 'data', 'base-policies', 'math.ckpt');
const skip = hfSkipReason();
let dir: string;
let store: DirectoryArtifactStore;
let baseFolder: string;
let request: TrainRequest;
let first: { result: FineTuneStepResult; folder: string };
const servers: ChildProcess[] = [];

/** Starts the trainer's HTTP server; resolves with a function that POSTs a request body to it. */
async function startTrainerServer(...extra: string[]) {
  const server = spawn(HF_PYTHON, [TRAINER, '--port', '0', '--threads', '1', ...extra], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  servers.push(server);
  let out = '';
  server.stdout?.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const url = await waitFor('the HF trainer to listen', async () => /(http:\/\/\S+\/train)/.exec(out)?.[1], 60_000);
  return async (body: unknown) => {
    const res = await fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
}

/** A trajectory as the rollouts record it: two model calls, the first cut at a stop string (no <|end|>). */
function trajectoryLine(i: number, reward: number): string {
  const q = `What is ${i} + ${i + 1}?`;
  const calc = `<calc>${i}+${i + 1}</calc>`;
  const prompt = renderChatPrompt([{ role: 'system', content: 'Use <calc>.' }, { role: 'user', content: q }]);
  const prompt2 = renderChatPrompt([{ role: 'system', content: 'Use <calc>.' }, { role: 'user', content: q }, { role: 'assistant', content: calc }, { role: 'tool', content: String(2 * i + 1) }]);
  const gen1 = encodeText(calc);
  const gen2 = [...encodeText(`<answer>${2 * i + 1}</answer>`), SPECIAL_TOKENS.END];
  const call = (turn: number, promptTokens: number[], generatedTokens: number[], stopReason: string) => ({ turn, seed: turn, promptTokens, generatedTokens, logprobs: generatedTokens.map(() => -0.5), text: '', stopReason });
  return JSON.stringify({
    schemaVersion: 1, trajectoryId: `t${i}#0@1`, taskId: `t${i}`, itemId: `t${i}`, sampleIndex: 0, runSeed: 1, step: 1, harnessId: 'h', harnessName: 'h0', domain: 'math',
    modelCalls: [call(0, prompt, gen1, 'stop-string'), call(1, prompt2, gen2, 'stop-token')],
    turns: [], messages: [], finalAnswer: String(2 * i + 1), stopReason: 'answer', stopDetail: '', harnessFailure: null, reward,
    tokenCounts: { prompt: prompt.length + prompt2.length, generated: gen1.length + gen2.length },
  });
}

const ctx = { heartbeat: () => undefined, throwIfCancelled: () => undefined };
const command = (...extra: string[]) => ({ kind: 'command' as const, command: [HF_PYTHON, TRAINER, '--threads', '1', ...extra], timeoutMs: 600_000 });

function safetensorsOf(folder: string): Buffer {
  return readFileSync(path.join(folder, 'model.safetensors'));
}

before(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(tmpdir(), 'whale-hf-trainer-'));
  store = new DirectoryArtifactStore(path.join(dir, 'artifacts'));
  baseFolder = path.join(dir, 'math-hf');
  await exportHfFolder(decodeCheckpoint(readFileSync(MATH)), baseFolder);
});
after(async () => {
  for (const server of servers) {
    if (server.exitCode !== null) continue;
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the Hugging Face reference trainer', { skip }, () => {
  it('trains a pointer run\'s step as the project\'s trainer does (same trajectory minibatches, losses and weights)', async () => {
    const jsonl = Array.from({ length: 7 }, (_, i) => trajectoryLine(i, i % 3 === 2 ? 0 : 1)).join('\n') + '\n';
    const input: FineTuneStepInput = {
      runId: 'hf', step: 1, seed: 11, acceptThreshold: 0.5, learningRate: 3e-4, minibatchSize: 2, minibatchUnit: 'trajectories', weightDecay: 0.1, clipNorm: 1, deterministic: true,
      checkpoint: await storeHfPointer(store, baseFolder),
      trajectories: await store.put('trajectories', jsonl),
    };
    // A run can start from it: prepareRun takes the pointer as the run's first checkpoint.
    const acts = createModelActivities({
      store, sampler: createEmbeddedSampler({ store, threads: 1, maxBatchRows: 64 }), trainer: createExternalFineTune({ store, artifactRoot: store.root, trainer: command() }),
      harnesses: { load: () => Promise.reject(new Error('prepareRun loads no harness')), close: async () => undefined }, limits: { maxNewTokensPerTurn: 24, maxEpisodeTokens: 64 },
      domain: (name) => getDomain(name).load({ kind: 'synthetic' }), basePolicy: () => readFileSync(MATH), seedHarness: (d) => readSeedHarness(d),
    });
    const prepared = await acts.prepareRun({ runId: 'hf', domain: 'math', seed: 1, modelPreset: 'embedded-1m', baseCheckpoint: input.checkpoint, baseHarness: null });
    assert.equal(prepared.checkpoint.sha256, input.checkpoint.sha256);
    const result = await runExternalFineTuneStep({ store, artifactRoot: store.root, trainer: command() }, input, ctx);
    const pointer = await readCheckpointPointer(store, result.checkpoint);
    assert.ok(pointer, 'the step answers a checkpoint pointer');
    assert.equal(pointer.parent, baseFolder);
    assert.ok(existsSync(path.join(pointer.model, 'model.safetensors')) && pointer.model !== baseFolder, 'a new checkpoint folder');
    assert.equal(result.minibatches, 3, 'five accepted trajectories in minibatches of two trajectories');
    first = { result, folder: pointer.model };
    const stepDir = path.join(store.root, 'external-trainer', readdirSync(path.join(store.root, 'external-trainer'))[0]);
    request = JSON.parse(readFileSync(path.join(stepDir, 'request.json'), 'utf8')) as TrainRequest;

    // The project's trainer on the same records rendered from their messages (the HF trainer's view of them:
    // the template closes every reply with <|end|>, also the one cut at a stop string).
    const records = readFileSync(request.dataset.path, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as DatasetRecord);
    const plain = records.map(({ prompt_token_ids: _p, completion_token_ids: _c, ...r }) => JSON.stringify(r)).join('\n') + '\n';
    writeFileSync(path.join(dir, 'plain.jsonl'), plain);
    // Its base: the HF folder imported back (the same weights, fresh AdamW moments as the HF trainer starts with).
    const baseBytes = encodeCheckpoint(await importHfFolder(baseFolder));
    writeFileSync(path.join(dir, 'base.ckpt'), baseBytes);
    const ref = { kind: 'checkpoint' as const, uri: `cas://sha256/${sha256Hex(baseBytes)}`, sha256: sha256Hex(baseBytes), bytes: baseBytes.length };
    const theirs = await trainFromRequest({
      ...request, dataset: { path: path.join(dir, 'plain.jsonl'), sha256: sha256Hex(plain), records: records.length },
      base_checkpoint: { ref, path: path.join(dir, 'base.ckpt'), model: null }, output_dir: dir,
    }, { threads: 1 });
    const want = records.reduce((n, r) => n + encodeText(r.messages[r.messages.length - 1].content).length + 1, 0);
    assert.equal(result.acceptedTokens, want, 'trained tokens: each record\'s last message and its <|end|>, nothing else');
    assert.equal(theirs.metrics?.trained_tokens, want);
    assert.equal(result.minibatches, theirs.metrics?.minibatches);
    const lossDiff = Math.abs((result.meanLoss as number) - (theirs.metrics?.mean_loss as number));
    const projectCk = decodeCheckpoint(readFileSync((theirs.checkpoint as { path: string }).path));
    const hfCk = await importHfFolder(first.folder);
    let worst = 0;
    let moved = 0;
    const base = decodeCheckpoint(baseBytes).params;
    const d = projectCk.config.dModel;
    for (const spec of paramLayout(projectCk.config).specs) {
      for (let i = spec.offset; i < spec.offset + spec.size; i++) {
        // The key bias's gradient is exactly zero in exact arithmetic (softmax ignores a shift shared by all
        // keys), so both trainers see rounding noise there, which AdamW scales up to full-size updates.
        if (spec.name.endsWith('attn.c_attn.bias') && i - spec.offset >= d && i - spec.offset < 2 * d) continue;
        worst = Math.max(worst, Math.abs(hfCk.params[i] - projectCk.params[i]));
        moved = Math.max(moved, Math.abs(projectCk.params[i] - base[i]));
      }
    }
    console.log(`[hf] mean loss HF ${result.meanLoss?.toFixed(6)} vs project ${theirs.metrics?.mean_loss?.toFixed(6)} (|diff| ${lossDiff.toExponential(2)}); ` +
      `weights after the step (key biases aside): max |HF - project| ${worst.toExponential(2)}, largest update ${moved.toExponential(2)}`);
    assert.ok(lossDiff <= 1e-4, `mean loss differs by ${lossDiff}`);
    // AdamW divides by sqrt(v): where a gradient is tiny, float rounding differences between the two
    // implementations become visible fractions of an update, so the bound is a tenth of the largest update.
    assert.ok(worst <= moved / 10, `the HF step's weights differ from the project's by ${worst} (updates are up to ${moved})`);
  });

  it('gives byte-equal weights for an equal deterministic request over HTTP, and answers a repeat from its store', async () => {
    assert.ok(first, 'needs the first test\'s step');
    const post = await startTrainerServer();
    const again = await post({ ...request, output_dir: path.join(dir, 'http-out') });
    assert.equal(again.status, 200, JSON.stringify(again.json));
    const folder = (again.json.checkpoint as { model: string }).model;
    assert.notEqual(folder, first.folder);
    assert.ok(safetensorsOf(folder).equals(safetensorsOf(first.folder)), 'two deterministic runs must write byte-equal safetensors');
    console.log(`[hf] deterministic: byte-equal model.safetensors (${safetensorsOf(folder).length} bytes, sha256 ${sha256Hex(safetensorsOf(folder)).slice(0, 16)})`);
    const bad = await post({ ...request, hyperparameters: { ...request.hyperparameters, learning_rate: -1 } });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.json), /learning_rate must be positive/);

    const repeat = await run([HF_PYTHON, TRAINER], JSON.stringify(request));
    assert.equal(repeat.code, 0, repeat.stderr);
    assert.match(repeat.stderr, /already finished/);
    assert.equal((JSON.parse(repeat.stdout) as { checkpoint: { model: string } }).checkpoint.model, first.folder);
    const rejected = await run([HF_PYTHON, TRAINER], JSON.stringify({ ...request, base_checkpoint: { ...request.base_checkpoint, path: MATH, model: null } }));
    assert.equal(rejected.code, 2);
    assert.match(rejected.stderr, /whale export <checkpoint> --format hf/);
  });

  it('trains a LoRA and merges it into a new checkpoint folder (only the adapted matrices change)', async () => {
    assert.ok(request, 'needs the first test\'s request');
    const res = await run([HF_PYTHON, TRAINER, '--threads', '1', '--lora-rank', '4'], JSON.stringify({ ...request, output_dir: path.join(dir, 'lora-out') }));
    assert.equal(res.code, 0, res.stderr);
    const folder = (JSON.parse(res.stdout.trim().split('\n').pop() as string) as { checkpoint: { model: string } }).checkpoint.model;
    const before = decodeSafetensors(safetensorsOf(baseFolder));
    const after = decodeSafetensors(safetensorsOf(folder));
    const changed = (name: string) => {
      const a = before[name].data;
      const b = (after[name] ?? after[name.replace(/^transformer\./, '')]).data;
      return a.some((x, i) => x !== b[i]);
    };
    assert.equal(changed('transformer.wte.weight'), false, 'embeddings are not adapted');
    assert.equal(changed('transformer.h.0.ln_1.weight'), false, 'LayerNorms are not adapted');
    assert.equal(changed('transformer.h.0.attn.c_attn.weight'), true, 'attention matrices carry the merged LoRA update');
    assert.equal(changed('transformer.h.3.mlp.c_fc.weight'), true, 'MLP matrices carry the merged LoRA update');
    assert.equal((await importHfFolder(folder)).params.length, decodeCheckpoint(readFileSync(MATH)).params.length, 'the merged folder imports');
  });

  it('writes an unmerged adapter per step in adapter mode, and the next step trains that adapter on', async () => {
    assert.ok(request, 'needs the first test\'s request');
    const post = await startTrainerServer('--lora-rank', '4', '--lora-output', 'adapter');
    const first = await post({ ...request, output_dir: path.join(dir, 'adapter-1') });
    assert.equal(first.status, 200, JSON.stringify(first.json));
    const a = (first.json.checkpoint as { model: string }).model;
    const second = await post({ ...request, step: request.step + 1, base_checkpoint: { ...request.base_checkpoint, model: a }, output_dir: path.join(dir, 'adapter-2') });
    assert.equal(second.status, 200, JSON.stringify(second.json));
    const b = (second.json.checkpoint as { model: string }).model;
    for (const folder of [a, b]) {
      assert.ok(!existsSync(path.join(folder, 'model.safetensors')), 'an adapter folder holds no full weights');
      const config = JSON.parse(readFileSync(path.join(folder, 'adapter_config.json'), 'utf8')) as { base_model_name_or_path: string; r: number };
      assert.equal(config.base_model_name_or_path, baseFolder, 'every step\'s adapter applies to the original base folder');
      assert.equal(config.r, 4);
    }
    const ta = decodeSafetensors(readFileSync(path.join(a, 'adapter_model.safetensors')));
    const tb = decodeSafetensors(readFileSync(path.join(b, 'adapter_model.safetensors')));
    assert.deepEqual(Object.keys(tb).sort(), Object.keys(ta).sort(), 'the second step trains the same adapter');
    assert.ok(Object.keys(ta).some((k) => ta[k].data.some((x, i) => x !== tb[k].data[i])), 'and moves it');
  });
});
