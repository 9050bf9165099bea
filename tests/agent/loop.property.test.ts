// Property test of the loop: random model behaviour (tool calls, right and wrong answers, illegal moves,
// garbage, overlong text) under random harness limits; every trajectory must satisfy the loop's invariants.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { runEpisodes } from '../../agent/loop';
import { trainingExamplesFromTrajectories } from '../../agent/trajectory';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { harnessSource } from './harness-fixtures';
import { ScriptedBackend } from './scripted-backend';
import { lookupEnv, lookupTask, sequenceEnv, sequenceTask } from './toy-env';

const OUTPUTS = ['<lookup>alpha</lookup>', '<answer>K7</answer>', '<answer>zz</answer>', 'hmm', 'x'.repeat(300), '<answer>a</answer>', '<answer>q</answer>', '<answer>c</answer>'];

void test('property: loop invariants hold for random model behaviour and harness limits', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        maxTurns: fc.integer({ min: 1, max: 5 }),
        formatErrors: fc.integer({ min: 0, max: 2 }),
        illegalActions: fc.integer({ min: 0, max: 2 }),
        maxEpisodeTokens: fc.integer({ min: 10, max: 200 }),
        maxContext: fc.integer({ min: 60, max: 400 }),
        sequence: fc.boolean(),
        picks: fc.array(fc.integer({ min: 0, max: OUTPUTS.length - 1 }), { minLength: 1, maxLength: 40 }),
      }),
      async (p) => {
        const loaded = loadHarnessInProcess(harnessSource({ maxTurns: p.maxTurns, retryBudgets: { formatErrors: p.formatErrors, illegalActions: p.illegalActions } }));
        assert.ok(loaded.ok);
        let n = 0;
        const backend = new ScriptedBackend(() => OUTPUTS[p.picks[n++ % p.picks.length]], p.maxContext);
        const sampling = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 40, maxEpisodeTokens: p.maxEpisodeTokens };
        const common = { backend, harness: loaded.runner, samplesPerTask: 3, sampling, runSeed: 2, step: 1 };
        const { trajectories } = p.sequence
          ? await runEpisodes({ ...common, environment: sequenceEnv, tasks: [sequenceTask('s', ['a', 'b', 'c', 'd'])] })
          : await runEpisodes({ ...common, environment: lookupEnv, tasks: [lookupTask('alpha'), lookupTask('bravo')] });
        const seeds = new Set<number>();
        for (const t of trajectories) {
          assert.ok(t.modelCalls.length <= p.maxTurns);
          assert.equal(t.turns.length, t.modelCalls.length, 'one turn record per model call');
          assert.ok(t.tokenCounts.generated <= p.maxEpisodeTokens);
          for (const c of t.modelCalls) {
            assert.ok(c.promptTokens.length + c.generatedTokens.length <= p.maxContext);
            assert.ok(!seeds.has(c.seed), 'seeds are unique per (task, sample, turn)');
            seeds.add(c.seed);
          }
          if (t.reward === 1) assert.equal(t.stopReason, 'answer');
          if (t.stopReason === 'answer') assert.equal(t.turns.at(-1)?.submit?.outcome, 'final');
          if (t.stopReason === 'format-errors') assert.equal(t.turns.filter((x) => x.action.kind === 'none').length, p.formatErrors + 1);
          if (t.stopReason === 'illegal-actions') assert.equal(t.turns.filter((x) => x.submit?.outcome === 'illegal').length, p.illegalActions + 1);
          if (t.stopReason === 'turn-limit') assert.equal(t.modelCalls.length, p.maxTurns);
          assert.equal(t.harnessFailure, null);
          assert.notEqual(t.stopReason, 'contract-violation', 'every answer here is a span of the model text');
        }
        for (const ex of trainingExamplesFromTrajectories(trajectories, { minReward: -1 })) {
          assert.equal(ex.tokens.length, ex.weights.length);
          const firstOne = ex.weights.indexOf(1);
          assert.ok(firstOne > 0 && ex.weights.slice(firstOne).every((w) => w === 1) && ex.weights.slice(0, firstOne).every((w) => w === 0));
        }
      },
    ),
    { numRuns: 150 },
  );
});
