// Checkpoints: canonical encoding (equal contents, equal hash), round trip through the artifact store,
// refusal of corrupted or truncated bytes, a killed writer leaves nothing that loads, and the
// transformers.js export loads locally and gives our next-token logits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { DirectoryArtifactStore, ArtifactIntegrityError } from '../../store/artifact-store';
import { Checkpoint, CheckpointFormatError, decodeCheckpoint, encodeCheckpoint, loadCheckpoint, saveCheckpoint } from '../../model/checkpoints/checkpoint';
import { modelConfig } from '../../model/config';
import { exportForTransformersJs } from '../../model/checkpoints/transformers-js-export';
import { Xoshiro128 } from '../../common/xoshiro';
import { initParams } from '../../model/checkpoints/init-params';
import { buildTrainGraph } from '../../model/graph/training-graph';
import { encodeText, renderChatPrompt } from '../../model/tokenizer';
import { OrtSampler } from '../../model/sampling/sampler';
import { Trainer } from '../../model/training/trainer';

const tmp = () => fs.mkdtemp(path.join(os.tmpdir(), 'whale-ckpt-'));

async function trainedCheckpoint(): Promise<Checkpoint> {
  const trainer = Trainer.fromSeed(modelConfig('tiny'), 3, { deterministic: true });
  const tokens = [Int32Array.from({ length: 40 }, (_, i) => (i * 7) % 50)];
  await trainer.step({ tokens, lossWeights: [new Float32Array(40).fill(1)] });
  const state = await trainer.state();
  await trainer.close();
  return state;
}

void test('checkpoints round-trip through the store and hash canonically', async () => {
  const store = new DirectoryArtifactStore(await tmp());
  const ck = await trainedCheckpoint();
  const ref = await saveCheckpoint(store, ck);
  const again = await saveCheckpoint(store, { ...ck, params: ck.params.slice(), config: { ...ck.config } });
  assert.deepEqual(again, ref, 'equal contents must give an equal reference');
  const next = await saveCheckpoint(store, { ...ck, step: ck.step + 1 });
  assert.notEqual(next.sha256, ref.sha256);
  const loaded = await loadCheckpoint(store, ref);
  assert.deepEqual(loaded.config, ck.config);
  assert.equal(loaded.step, 1);
  assert.deepEqual(loaded.params, ck.params);
  assert.deepEqual(loaded.adamM, ck.adamM);
  assert.deepEqual(loaded.adamV, ck.adamV);
  const resumed = Trainer.fromState(loaded);
  assert.equal(resumed.stepCount, 1);
  await resumed.close();
});

void test('a corrupted or truncated checkpoint is refused with a clear error', async () => {
  const root = await tmp();
  const store = new DirectoryArtifactStore(root);
  const ck = await trainedCheckpoint();
  const ref = await saveCheckpoint(store, ck);
  const file = path.join(root, 'objects', ref.sha256.slice(0, 2), ref.sha256.slice(2));
  const bytes = await fs.readFile(file);
  const flipped = Buffer.from(bytes);
  flipped[flipped.length - 5] ^= 0x40;
  await fs.writeFile(file, flipped);
  await assert.rejects(loadCheckpoint(store, ref), (e: Error) => e instanceof ArtifactIntegrityError && /corrupt/.test(e.message));
  await fs.writeFile(file, bytes.subarray(0, bytes.length - 100));
  await assert.rejects(loadCheckpoint(store, ref), ArtifactIntegrityError);
  // The inner checks catch bad bytes that reach decoding by another path (e.g. a copied file).
  assert.throws(() => decodeCheckpoint(bytes.subarray(0, bytes.length - 100)), (e: Error) => e instanceof CheckpointFormatError && /truncated/.test(e.message));
  assert.throws(() => decodeCheckpoint(flipped), (e: Error) => e instanceof CheckpointFormatError && /corrupted/.test(e.message));
  assert.throws(() => decodeCheckpoint(new Uint8Array(10)), /missing header magic/);
  await assert.rejects(loadCheckpoint(store, { ...ref, kind: 'dataset' }), /not a checkpoint/);
});

void test('a writer killed mid-save leaves no object that fails to load', async () => {
  const root = await tmp();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures', 'checkpoint-writer.ts'), root], { stdio: ['ignore', 'pipe', 'inherit'] });
  const objects = path.join(root, 'objects');
  // Kill the child while a temp file is being written (polling, bounded by the test's own timeout).
  const deadline = Date.now() + 60_000;
  let sawTmp = false;
  while (Date.now() < deadline && !sawTmp) {
    await new Promise((r) => setImmediate(r));
    const dirs = await fs.readdir(objects).catch(() => [] as string[]);
    for (const d of dirs) if ((await fs.readdir(path.join(objects, d)).catch(() => [] as string[])).some((f) => f.endsWith('.tmp'))) sawTmp = true;
  }
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  assert.ok(sawTmp, 'the writer never started a write');
  const store = new DirectoryArtifactStore(root);
  for (const sha of await store.listObjects()) {
    const size = (await fs.stat(path.join(objects, sha.slice(0, 2), sha.slice(2)))).size;
    const ck = await loadCheckpoint(store, { kind: 'checkpoint', uri: `cas://sha256/${sha}`, sha256: sha, bytes: size });
    assert.equal(ck.config.dModel, 192);
  }
});

void test('an exported checkpoint loads in transformers.js (local only) and gives the same next-token logits', async () => {
  const { env, AutoModelForCausalLM, AutoTokenizer } = await import('@huggingface/transformers');
  const base = await tmp();
  const c = modelConfig('tiny');
  const rng = new Xoshiro128(4);
  const params = Float32Array.from(initParams(c, 9), (x) => x * 5 + 0.01 * rng.normal());
  const ck: Checkpoint = { config: c, params, adamM: new Float32Array(params.length), adamV: new Float32Array(params.length), step: 0 };
  await exportForTransformersJs(ck, path.join(base, 'whale-tiny'));
  env.allowRemoteModels = false;
  env.localModelPath = base;
  const tokenizer = await AutoTokenizer.from_pretrained('whale-tiny');
  const prompt = renderChatPrompt([{ role: 'user', content: 'Wie viel ist 3+4? ü' }]);
  const text = '<|user|>Wie viel ist 3+4? ü<|end|><|assistant|>';
  const ids = (tokenizer(text).input_ids.tolist() as bigint[][])[0].map(Number);
  assert.deepEqual(ids, prompt, 'transformers.js tokenizer must match renderChatPrompt');
  assert.equal(tokenizer.decode(ids), text, 'transformers.js decode must invert encode');
  const model = await AutoModelForCausalLM.from_pretrained('whale-tiny');
  const out = await model(tokenizer(text));
  const theirs = (out.logits.data as Float32Array).slice((prompt.length - 1) * c.vocabSize);
  const T = prompt.length;
  const s = await ort.InferenceSession.create(buildTrainGraph(c, { rows: 1, seqLen: T, mode: 'loss', emitLogits: true }));
  const ours = await s.run({ params: new ort.Tensor('float32', params, [params.length]), tokens: new ort.Tensor('int32', Int32Array.from(prompt), [1, T]), targets: new ort.Tensor('int32', new Int32Array(T), [1, T]), weights: new ort.Tensor('float32', new Float32Array(T), [1, T]) });
  const mine = (ours.logits.data as Float32Array).slice((T - 1) * c.vocabSize);
  let worst = 0;
  for (let i = 0; i < c.vocabSize; i++) worst = Math.max(worst, Math.abs(mine[i] - theirs[i]));
  console.log(`[export] transformers.js next-token logits vs ours: max |diff| ${worst.toExponential(2)}`);
  assert.ok(worst <= 1e-4, `transformers.js logits differ by ${worst}`);
  await s.release();
  // Its KV-cache generation (batched, left-padded) matches our greedy sampler token for token.
  tokenizer.padding_side = 'left';
  const texts = ['hi', 'a much longer prompt'];
  const enc = tokenizer(texts, { padding: true });
  const width = (enc.input_ids.dims as number[])[1];
  const generated = ((await model.generate({ ...enc, max_new_tokens: 6, do_sample: false })) as { tolist(): bigint[][] }).tolist();
  const sampler = await OrtSampler.create(c, params, { threads: 1 });
  const greedy = await sampler.generate(texts.map((t) => ({ promptTokens: encodeText(t), maxNewTokens: 6, temperature: 0, topK: 0, topP: 1, stopTokens: [], seed: 1 })));
  texts.forEach((_, i) => assert.deepEqual(generated[i].slice(width).map(Number), greedy[i].tokens, `greedy continuation of prompt ${i}`));
  await sampler.close();
  await model.dispose();
});

void test('encoding is canonical: equal checkpoints encode to equal bytes', async () => {
  const ck = await trainedCheckpoint();
  assert.deepEqual(encodeCheckpoint(ck), encodeCheckpoint({ ...ck, config: { ...ck.config } }));
});
