// The RSFT minibatch unit: with unit 'trajectories' a weight step makes one optimizer update per N accepted
// trajectories whatever their turn counts (unit 'calls' makes more when trajectories have more calls), and
// an update accumulated over micro-batches is the update of one batch normalised by its trained tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { modelConfig } from '../../model/config';
import { encodeText } from '../../model/tokenizer';
import { Trainer, type TrainBatch } from '../../model/training/trainer';
import { DEFAULT_HYPERPARAMS } from '../../model';
import { initParams } from '../../model/checkpoints/init-params';
import type { TrainingExample } from '../../agent/trajectory';
import { MICRO_BATCH_ROWS, planUpdates, runSftEpoch, type MinibatchUnit } from '../../training/rsft';

const HYPER = { ...DEFAULT_HYPERPARAMS, lr: 1e-3, weightDecay: 0 };

/** `trajectories` accepted trajectories of `calls` model calls each; prompt weight 0, reply weight 1. */
function examples(trajectories: number, calls: number): TrainingExample[] {
  const out: TrainingExample[] = [];
  for (let t = 0; t < trajectories; t++) {
    for (let c = 0; c < calls; c++) {
      const prompt = [...encodeText(`q${t} turn ${c}:`)];
      const reply = [...encodeText(` a${(t * 7 + c) % 10}`)];
      out.push({ trajectoryId: `t${t}#0@1`, callIndex: c, tokens: [...prompt, ...reply], weights: [...prompt.map(() => 0), ...reply.map(() => 1)] });
    }
  }
  return out;
}

async function updates(unit: MinibatchUnit, ex: TrainingExample[]): Promise<number> {
  const trainer = Trainer.fromSeed(modelConfig('tiny'), 3, { deterministic: true });
  try {
    const r = await runSftEpoch(trainer, ex, { minibatchSize: 4, unit, hyper: HYPER, seed: 1, step: 1 });
    assert.equal(r.trainedMinibatches, r.minibatches);
    assert.equal(trainer.stepCount, r.minibatches, 'one optimizer update per minibatch');
    return trainer.stepCount;
  } finally {
    await trainer.close();
  }
}

void test('a weight step makes the same number of optimizer updates for the same accepted trajectories whatever their turn counts', async () => {
  // 10 trajectories, minibatches of 4: three updates, with 1 call or 5 calls per trajectory.
  assert.equal(await updates('trajectories', examples(10, 1)), 3);
  assert.equal(await updates('trajectories', examples(10, 5)), 3);
  // The old unit counts calls: 50 calls in minibatches of 4 make 13 updates, so a harness adding turns adds updates.
  assert.equal(await updates('calls', examples(10, 1)), 3);
  assert.equal(await updates('calls', examples(10, 5)), 13);
});

void test('a trajectory minibatch holds every kept call of its trajectories, in fixed-size micro-batches', () => {
  const plan = planUpdates(examples(10, 5), { minibatchSize: 4, unit: 'trajectories', seed: 1, step: 1 });
  assert.deepEqual(plan.map((micro) => new Set(micro.flat().map((e) => e.trajectoryId)).size), [4, 4, 2]);
  for (const micro of plan) {
    const ids = new Set(micro.flat().map((e) => e.trajectoryId));
    for (const id of ids) assert.equal(micro.flat().filter((e) => e.trajectoryId === id).length, 5, `all calls of ${id} in one minibatch`);
    assert.ok(micro.every((rows) => rows.length <= MICRO_BATCH_ROWS));
    assert.equal(micro.length, Math.ceil(micro.flat().length / MICRO_BATCH_ROWS));
  }
  // Every trajectory is trained exactly once per epoch.
  assert.equal(plan.flat(2).length, 50);
});

function batchOf(ex: readonly TrainingExample[]): TrainBatch {
  return { tokens: ex.map((e) => Int32Array.from(e.tokens)), lossWeights: ex.map((e) => Float32Array.from(e.weights)) };
}

void test('an update accumulated over micro-batches equals one update on the whole batch (loss over all trained tokens)', async () => {
  const ex = examples(6, 3);
  // Uneven micro-batches with different token counts: a plain mean of micro-batch losses would differ.
  const parts = [ex.slice(0, 3), ex.slice(3, 11), ex.slice(11)];
  const whole = Trainer.fromSeed(modelConfig('tiny'), 5, { deterministic: true });
  const accumulated = Trainer.fromSeed(modelConfig('tiny'), 5, { deterministic: true });
  try {
    const a = await whole.step(batchOf(ex), HYPER);
    const b = await accumulated.accumulateStep(parts.map(batchOf), HYPER);
    assert.ok(Math.abs(a.loss - b.loss) < 1e-5, `loss ${a.loss} vs ${b.loss}`);
    assert.ok(Math.abs(a.gradNorm - b.gradNorm) / a.gradNorm < 1e-4, `grad norm ${a.gradNorm} vs ${b.gradNorm}`);
    assert.equal(b.weightedTokens, a.weightedTokens);
    const [pa, pb] = [(await whole.state()).params, (await accumulated.state()).params];
    let maxDiff = 0;
    for (let i = 0; i < pa.length; i++) maxDiff = Math.max(maxDiff, Math.abs(pa[i] - pb[i]));
    assert.ok(maxDiff < 1e-5, `parameters differ by up to ${maxDiff}`);
    const start = initParams(modelConfig('tiny'), 5);
    let moved = 0;
    for (let i = 0; i < pa.length; i++) moved = Math.max(moved, Math.abs(pa[i] - start[i]));
    assert.ok(moved > 1e-4, 'the update moved the weights');
    // Two threads: micro-batches run in pairs (here and in the helper), the sum keeps its order.
    const parallel = Trainer.fromSeed(modelConfig('tiny'), 5, { threads: 2 });
    try {
      const c = await parallel.accumulateStep(parts.map(batchOf), HYPER);
      assert.ok(Math.abs(a.loss - c.loss) < 1e-4, `two-thread loss ${c.loss} vs ${a.loss}`);
      const pc = (await parallel.state()).params;
      let diff = 0;
      for (let i = 0; i < pa.length; i++) diff = Math.max(diff, Math.abs(pa[i] - pc[i]));
      assert.ok(diff < 1e-4, `two-thread parameters differ by up to ${diff}`);
    } finally {
      await parallel.close();
    }
  } finally {
    await whole.close();
    await accumulated.close();
  }
});
