// Trainer behaviour: loss on a fixed corpus halves within 200 steps, deterministic mode repeats bit for
// bit, and malformed batches are refused with a message that says what to fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { modelConfig } from '../../model/config';
import { encodeText } from '../../model/tokenizer';
import { Trainer, TrainBatch } from '../../model/training/trainer';

const CORPUS = [
  'the cat sat on the mat. the dog sat on the log. ',
  'one two three four five six seven eight nine ten. ',
  'alpha beta gamma delta epsilon zeta eta theta. ',
  'red green blue red green blue red green blue. ',
];

function corpusBatch(): TrainBatch {
  const tokens = CORPUS.map((s) => Int32Array.from(encodeText(s.repeat(2)).slice(0, 64)));
  // Prompt-style masking: the first 8 tokens of each row are context only.
  const lossWeights = tokens.map((t) => Float32Array.from(t, (_, i) => (i < 8 ? 0 : 1)));
  return { tokens, lossWeights };
}

void test('loss on a fixed small corpus falls by at least half within 200 steps', async () => {
  const trainer = Trainer.fromSeed(modelConfig('tiny'), 1, { deterministic: true });
  const batch = corpusBatch();
  const hyper = { lr: 3e-3, weightDecay: 0.01, clipNorm: 1, beta1: 0.9, beta2: 0.95, eps: 1e-8 };
  const first = await trainer.step(batch, hyper);
  let last = first;
  for (let i = 1; i < 200; i++) {
    last = await trainer.step(batch, hyper);
    if (last.loss <= first.loss / 2 && i >= 20) break;
  }
  console.log(`[train] loss ${first.loss.toFixed(3)} -> ${last.loss.toFixed(3)} after ${trainer.stepCount} steps`);
  assert.ok(first.loss > 5, `initial loss ${first.loss} should be near ln(264) = 5.58`);
  assert.ok(last.loss <= first.loss / 2, `loss fell only from ${first.loss} to ${last.loss}`);
  assert.equal(first.tokens, 4 * 63);
  assert.equal(first.weightedTokens, 4 * 56);
  await trainer.close();
});

void test('deterministic mode gives bit-identical parameters run to run', async () => {
  const runs: Float32Array[] = [];
  for (let r = 0; r < 2; r++) {
    const trainer = Trainer.fromSeed(modelConfig('tiny'), 7, { deterministic: true });
    for (let i = 0; i < 3; i++) await trainer.step(corpusBatch());
    runs.push((await trainer.state()).params);
    await trainer.close();
  }
  assert.deepEqual(runs[0], runs[1]);
});

void test('data-parallel steps (2 threads) match the single-graph deterministic steps', async () => {
  const batch = corpusBatch();
  const single = Trainer.fromSeed(modelConfig('tiny'), 3, { deterministic: true });
  const parallel = Trainer.fromSeed(modelConfig('tiny'), 3, { threads: 2 });
  for (let i = 0; i < 3; i++) {
    const [a, b] = [await single.step(batch), await parallel.step(batch)];
    assert.ok(Math.abs(a.loss - b.loss) <= 1e-5 * a.loss, `step ${i}: loss ${a.loss} vs ${b.loss}`);
    assert.ok(Math.abs(a.gradNorm - b.gradNorm) <= 1e-4 * a.gradNorm, `step ${i}: grad norm ${a.gradNorm} vs ${b.gradNorm}`);
  }
  const [pa, pb] = [(await single.state()).params, (await parallel.state()).params];
  let diff = 0;
  let norm = 0;
  for (let i = 0; i < pa.length; i++) {
    diff += (pa[i] - pb[i]) ** 2;
    norm += pa[i] ** 2;
  }
  assert.ok(Math.sqrt(diff / norm) < 1e-5, `parameters differ by ${Math.sqrt(diff / norm)} (relative)`);
  await single.close();
  await parallel.close();
});

void test('a training step leaves the event loop free (ORT runs off the main thread)', async () => {
  const trainer = Trainer.fromSeed(modelConfig('embedded-1m'), 1);
  const tokens = Array.from({ length: 16 }, (_, r) => Int32Array.from({ length: 129 }, (_, i) => (r + i) % 256));
  const lossWeights = tokens.map((t) => new Float32Array(t.length).fill(1));
  await trainer.step({ tokens, lossWeights }); // builds the session
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const started = performance.now();
  await trainer.step({ tokens, lossWeights });
  const ms = performance.now() - started;
  clearInterval(timer);
  console.log(`[train] embedded-1m 16x128 step ${ms.toFixed(0)} ms, ${ticks} timer ticks meanwhile`);
  assert.ok(ticks >= Math.min(5, ms / 10), `only ${ticks} timer ticks during a ${ms.toFixed(0)} ms step: the step blocks the event loop`);
  await trainer.close();
});

void test('malformed batches are refused with a clear message', async () => {
  const trainer = Trainer.fromSeed(modelConfig('tiny'), 1);
  await assert.rejects(trainer.step({ tokens: [[1]], lossWeights: [[1]] }), /at least 2/);
  await assert.rejects(trainer.step({ tokens: [[1, 2]], lossWeights: [[1]] }), /lossWeights has 1 entries for 2 tokens/);
  await assert.rejects(trainer.step({ tokens: [Array(100).fill(1)], lossWeights: [Array(100).fill(1)] }), /exceeds the model context 64/);
  await assert.rejects(trainer.step({ tokens: [[1, 999]], lossWeights: [[1, 1]] }), /outside \[0, 264\)/);
  await trainer.close();
});
