// One trajectory format end to end: rollouts -> JSONL -> RSFT training examples, with the loss mask
// checked token by token against what the model backend was asked and what it generated.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runEpisodes } from '../../agent/loop';
import { summarizeRollouts } from '../../agent/rollout-summary';
import { trainingExamplesFromTrajectories, trajectoriesFromJsonl, trajectoriesToJsonl } from '../../agent/trajectory';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { SPECIAL_TOKENS, encodeText } from '../../model/tokenizer';
import { harnessSource } from './harness-fixtures';
import { ScriptedBackend, lastMessage } from './scripted-backend';
import { lookupEnv, lookupTask } from './toy-env';

void test('training examples: one per kept model call of accepted trajectories, prompt weight 0, generated weight 1', async () => {
  const loaded = loadHarnessInProcess(harnessSource());
  assert.ok(loaded.ok);
  // charlie gets a wrong answer (reward 0) so the accept rule has something to drop.
  const generatedTexts: string[] = [];
  const backend = new ScriptedBackend((prompt) => {
    const last = lastMessage(prompt);
    const q = /code of (\w+)\?/.exec(last);
    const r = /(\w+): (\w+)/.exec(last);
    const text = q ? `<lookup>${q[1]}</lookup>` : r ? `<answer>${r[1] === 'charlie' ? 'Z8' : r[2]}</answer>` : undefined;
    if (text !== undefined) generatedTexts.push(text);
    return text;
  });
  const { trajectories } = await runEpisodes({
    backend,
    environment: lookupEnv,
    harness: loaded.runner,
    tasks: [lookupTask('alpha'), lookupTask('charlie')],
    samplesPerTask: 2,
    sampling: { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 64, maxEpisodeTokens: 512 },
    runSeed: 1,
    step: 0,
  });
  assert.deepEqual(trajectories.map((t) => t.reward), [1, 1, 0, 0]);

  // JSONL round trip through the schema the fine-tune step reads.
  const reread = trajectoriesFromJsonl(trajectoriesToJsonl(trajectories));
  assert.deepEqual(reread, trajectories);

  const examples = trainingExamplesFromTrajectories(reread);
  const accepted = reread.filter((t) => t.reward > 0.5);
  assert.equal(examples.length, accepted.reduce((n, t) => n + t.modelCalls.length, 0));
  const requests = backend.batches.flat();
  for (const ex of examples) {
    const traj = accepted.find((t) => t.trajectoryId === ex.trajectoryId);
    assert.ok(traj, `example of unknown trajectory ${ex.trajectoryId}`);
    const call = traj.modelCalls[ex.callIndex];
    const request = requests.find((r) => r.seed === call.seed);
    assert.ok(request, 'every recorded call matches a backend request by seed');
    assert.equal(ex.tokens.length, ex.weights.length);
    assert.equal(ex.tokens.length, request.promptTokens.length + call.generatedTokens.length);
    for (let i = 0; i < ex.tokens.length; i++) {
      if (i < request.promptTokens.length) {
        assert.equal(ex.tokens[i], request.promptTokens[i], `prompt token ${i}`);
        assert.equal(ex.weights[i], 0, `prompt token ${i} must carry weight 0`);
      } else {
        assert.equal(ex.weights[i], 1, `generated token ${i} must carry weight 1`);
      }
    }
    // The weight-1 tokens are exactly the model's output: its text plus the END token it stopped on.
    const generated = ex.tokens.filter((_, i) => ex.weights[i] === 1);
    assert.ok(generatedTexts.some((text) => JSON.stringify([...encodeText(text), SPECIAL_TOKENS.END]) === JSON.stringify(generated)));
    assert.equal(ex.tokens[request.promptTokens.length - 1], SPECIAL_TOKENS.ASSISTANT, 'context ends with the assistant header');
  }
  assert.equal(trainingExamplesFromTrajectories(reread, { minReward: -1 }).length, reread.reduce((n, t) => n + t.modelCalls.length, 0));
});

void test('a corrupt JSONL line is reported with its line number', () => {
  assert.throws(() => trajectoriesFromJsonl('{"schemaVersion":1}\n'), /line 1 is not a valid trajectory/);
});

void test('summarizeRollouts: success rate, mean turns, stop reasons and solved tasks', async () => {
  const loaded = loadHarnessInProcess(harnessSource({ retryBudgets: { formatErrors: 0, illegalActions: 0 } }));
  assert.ok(loaded.ok);
  // alpha: lookup then right answer (2 turns); bravo: a format error ends it at once (1 turn).
  const backend = new ScriptedBackend((prompt) => {
    const last = lastMessage(prompt);
    if (/code of alpha/.test(last)) return '<lookup>alpha</lookup>';
    if (/code of bravo/.test(last)) return 'no tags here';
    if (last === 'alpha: K7') return '<answer>K7</answer>';
    return undefined;
  });
  const { trajectories } = await runEpisodes({
    backend, environment: lookupEnv, harness: loaded.runner, tasks: [lookupTask('alpha'), lookupTask('bravo')], samplesPerTask: 2,
    sampling: { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 64, maxEpisodeTokens: 512 }, runSeed: 1, step: 0,
  });
  const s = summarizeRollouts(trajectories);
  assert.equal(s.episodes, 4);
  assert.equal(s.successRate, 0.5);
  assert.equal(s.meanTurns, 1.5);
  assert.equal(s.formatErrorRate, 0.5);
  assert.equal(s.distinctSolvedTasks, 1);
  assert.deepEqual(s.stopReasons, { answer: 2, 'format-errors': 2 });
  assert.deepEqual(s.harnessFailures, {});
  assert.equal(summarizeRollouts([]).successRate, 0);
});
