// Pretraining pipeline: the teacher corpus is made of the agent loop's own transcripts (D_weight only,
// prompt weight 0, generated weight 1), and a few steps on a tiny model lower the loss.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getDomain } from '../../domains/registry';
import { decodeTokens, renderChatPrompt } from '../../model/tokenizer';
import { buildPretrainCorpus, defaultHarnessMix, mergePrefixExamples } from '../../training/corpus';
import { pretrainBasePolicy, DEFAULT_PRETRAIN } from '../../training/pretrain';

void test('the math corpus holds the loop transcripts of D_weight episodes, generated tokens weighted 1', async () => {
  const instance = getDomain('math').load({ kind: 'synthetic' });
  const corpus = await buildPretrainCorpus({ domain: 'math', instance, harnesses: defaultHarnessMix('math'), seed: 5, contextLength: 1024, maxTasks: 12 });
  const weightIds = new Set(instance.splits.weight.map((t) => t.id));
  assert.equal(corpus.trajectories.length, 12 * 4);
  assert.ok(corpus.trajectories.every((t) => weightIds.has(t.taskId)), 'demonstrations come from D_weight only');
  assert.deepEqual(corpus.stats.perHarness.map((h) => h.label), ['h0', 'reference', 'variant']);
  assert.ok(corpus.trajectories.some((t) => t.turns.some((u) => u.tool?.tool === 'calc')), 'some demonstrations call the calculator');
  assert.ok(corpus.trajectories.some((t) => t.reward === 0) && corpus.trajectories.some((t) => t.reward === 1), 'right and wrong demonstrations alike');
  const byTrajectory = new Map(corpus.trajectories.map((t) => [t.trajectoryId, t]));
  for (const e of corpus.examples) {
    const t = byTrajectory.get(e.trajectoryId);
    assert.ok(t);
    assert.equal(e.tokens.length, e.weights.length);
    // Math harnesses only append messages, so one row holds the whole episode as the loop rendered it.
    assert.deepEqual(e.tokens, renderChatPrompt(t.messages).slice(0, -1), 'the example is the episode transcript');
    const generated = t.modelCalls.map((c) => decodeTokens(c.generatedTokens)).join('');
    const weighted = decodeTokens(e.tokens.filter((_, i) => e.weights[i] === 1));
    assert.equal(weighted, generated, 'exactly the model-generated tokens carry weight');
    assert.ok(e.weights.every((w) => w === 0 || w === 1));
  }
});

void test('mergePrefixExamples folds a call into the next one only when the next prompt extends it', () => {
  const a = { trajectoryId: 't', callIndex: 0, tokens: [1, 2, 3], weights: [0, 1, 1] };
  const b = { trajectoryId: 't', callIndex: 1, tokens: [1, 2, 3, 4, 5], weights: [0, 0, 0, 0, 1] };
  const rewritten = { trajectoryId: 't', callIndex: 2, tokens: [9, 5, 6], weights: [0, 0, 1] };
  const other = { trajectoryId: 'u', callIndex: 0, tokens: [1, 2, 3, 4, 5, 6], weights: [0, 0, 0, 0, 0, 1] };
  const merged = mergePrefixExamples([a, b, rewritten, other]);
  assert.deepEqual(merged.map((e) => e.weights), [[0, 1, 1, 0, 1], [0, 0, 1], [0, 0, 0, 0, 0, 1]]);
});

void test('a few pretraining steps on the tiny preset lower the loss', async () => {
  const progress: number[] = [];
  const result = await pretrainBasePolicy({
    ...DEFAULT_PRETRAIN, domain: 'math', seed: 3, preset: 'tiny', contextLength: 512, steps: 40, minutes: undefined, minibatchSize: 8, lr: 3e-3, warmupSteps: 5,
    chunkMinibatches: 4, maxTasks: 24, threads: 1, progressEverySteps: 10, onProgress: (p) => progress.push(p.step),
  });
  assert.equal(result.steps, 40);
  assert.equal(result.stoppedBy, 'steps');
  assert.deepEqual(progress, [10, 20, 30, 40, 40]);
  assert.ok(result.finalLoss < result.firstLoss - 1, `loss ${result.firstLoss} -> ${result.finalLoss}`);
  assert.equal(result.checkpoint.step, 0);
  assert.ok(result.checkpoint.adamM.every((x) => x === 0), 'the base policy carries no optimizer state');
});
