// RSFT trains what the episode kept: a call whose rejected action a `replace` removed, or whose text the
// harness swapped for a tool call of its own, is recorded as dropped and never becomes a training target;
// a harness that only shortens the context (the chess reference harness) keeps every call trained.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderHook, emptyFeedbackPlan } from '../../activities/proposers/hook-templates';
import { runEpisodes } from '../../agent/loop';
import { trainingExamplesFromTrajectories, trajectoriesFromJsonl, trajectoriesToJsonl, type Trajectory } from '../../agent/trajectory';
import { readReferenceHarness } from '../../domains/reference-harnesses';
import { getDomain } from '../../domains/registry';
import type { ChessReference } from '../../domains/chess/tasks';
import type { DomainEnvironment, EnvTask } from '../../domains/types';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { SPECIAL_TOKENS, decodeTokens, encodeText } from '../../model/tokenizer';
import { harnessSource } from './harness-fixtures';
import { ScriptedBackend, lastMessage } from './scripted-backend';
import { lookupEnv, lookupTask } from './toy-env';

const SAMPLING = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 64, maxEpisodeTokens: 512 };

function load(source: string) {
  const r = loadHarnessInProcess(source);
  if (!r.ok) assert.fail(`harness invalid: ${r.violations.map((v) => `${v.where}: ${v.message}`).join('; ')}`);
  return r.runner;
}

/** Every example's weights: 0 on the call's prompt tokens, 1 on exactly its generated tokens. */
function checkWeights(t: Trajectory, examples: ReturnType<typeof trainingExamplesFromTrajectories>): void {
  for (const ex of examples) {
    const call = t.modelCalls[ex.callIndex];
    assert.deepEqual(ex.tokens, [...call.promptTokens, ...call.generatedTokens]);
    assert.deepEqual(ex.weights, [...call.promptTokens.map(() => 0), ...call.generatedTokens.map(() => 1)]);
  }
}

void test('the resampling forced-first-tool harness: the rejected, removed call is dropped; only kept calls train', async () => {
  const hooks = [
    renderHook({ hook: 'parseAction', plan: { firstTool: true, untilTool: true } }, '<answer>...</answer>'),
    renderHook({ hook: 'feedback', plan: { ...emptyFeedbackPlan(), dropRejected: true } }, '<answer>...</answer>'),
  ].join(',\n');
  const harness = load(harnessSource({ maxTurns: 6, retryBudgets: { formatErrors: 3, illegalActions: 1 } }, hooks));
  // The first sample of the opening context answers at once (rejected: no tool yet); its resample looks up.
  let openings = 0;
  const backend = new ScriptedBackend((prompt) => {
    const last = lastMessage(prompt);
    if (/code of alpha\?/.test(last)) return openings++ === 0 ? '<answer>K7</answer>' : '<lookup>alpha</lookup>';
    if (/alpha: K7/.test(last)) return '<answer>K7</answer>';
    return undefined;
  });
  const { trajectories } = await runEpisodes({ backend, environment: lookupEnv, harness, tasks: [lookupTask('alpha')], samplesPerTask: 1, sampling: SAMPLING, runSeed: 1, step: 0 });
  const [t] = trajectoriesFromJsonl(trajectoriesToJsonl(trajectories));
  assert.equal(t.reward, 1, t.stopDetail);
  assert.deepEqual(t.modelCalls.map((c) => [c.kept, c.dropReason]), [[false, 'rejected-removed'], [true, null], [true, null]]);
  // The resample saw the same context as the rejected call: the rejected answer is gone from the conversation.
  assert.deepEqual(t.modelCalls[1].promptTokens, t.modelCalls[0].promptTokens);

  const examples = trainingExamplesFromTrajectories([t]);
  assert.deepEqual(examples.map((e) => e.callIndex), [1, 2]);
  checkWeights(t, examples);
  // The pretraining corpus imitates every teacher turn: it asks for the dropped ones too.
  assert.deepEqual(trainingExamplesFromTrajectories([t], { includeDropped: true }).map((e) => e.callIndex), [0, 1, 2]);
  // The weight-1 tokens are the resampled lookup and the answer, never the rejected first answer.
  const trained = examples.map((e) => e.tokens.filter((_, i) => e.weights[i] === 1));
  assert.deepEqual(trained, ['<lookup>alpha</lookup>', '<answer>K7</answer>'].map((text) => [...encodeText(text), SPECIAL_TOKENS.END]));
});

void test('a format error answered by appended feedback stays in the conversation and stays trained', async () => {
  const harness = load(harnessSource({ retryBudgets: { formatErrors: 2, illegalActions: 1 } }));
  let openings = 0;
  const backend = new ScriptedBackend((prompt) => {
    const last = lastMessage(prompt);
    if (/code of alpha\?/.test(last) && openings++ === 0) return 'I will look it up.';
    if (/code of alpha\?|Format error|no complete action/i.test(last)) return '<lookup>alpha</lookup>';
    if (/alpha: K7/.test(last)) return '<answer>K7</answer>';
    return undefined;
  });
  const { trajectories: [t] } = await runEpisodes({ backend, environment: lookupEnv, harness, tasks: [lookupTask('alpha')], samplesPerTask: 1, sampling: SAMPLING, runSeed: 1, step: 0 });
  assert.equal(t.reward, 1, t.stopDetail);
  assert.equal(t.turns[0].action.kind, 'none');
  assert.ok(t.modelCalls.length === 3 && t.modelCalls.every((c) => c.kept), JSON.stringify(t.modelCalls.map((c) => c.dropReason)));
});

void test('the forced first call on the question: the turn whose text the harness replaced is not trained', async () => {
  const hooks = renderHook({ hook: 'parseAction', plan: { firstTool: true, callWithQuestion: true } }, '<answer>...</answer>');
  const harness = load(harnessSource({}, hooks));
  const backend = new ScriptedBackend((prompt) => {
    const last = lastMessage(prompt);
    if (/code of alpha\?/.test(last) && !/no entry/.test(last)) return '<answer>K7</answer>';
    if (/no entry for What is the code of alpha\?/.test(last)) return '<answer>K7</answer>';
    return undefined;
  });
  const { trajectories: [t] } = await runEpisodes({ backend, environment: lookupEnv, harness, tasks: [lookupTask('alpha')], samplesPerTask: 1, sampling: SAMPLING, runSeed: 1, step: 0 });
  assert.equal(t.reward, 1, t.stopDetail);
  assert.deepEqual(t.turns[0].action, { kind: 'tool', tool: 'lookup', input: 'What is the code of alpha?' });
  assert.deepEqual(t.modelCalls.map((c) => c.dropReason), ['harness-made', null]);
  const examples = trainingExamplesFromTrajectories([t]);
  assert.deepEqual(examples.map((e) => e.callIndex), [1]);
  checkWeights(t, examples);
});

void test('query rewriting is not a harness-made call: the model wrote a tool call, the harness only changed its input', async () => {
  const hooks = `parseAction(input) {
      const m = /<lookup>([^<]*)<\\/lookup>/.exec(input.text);
      if (m) return { state: input.state, action: { kind: 'tool', tool: 'lookup', input: m[1].trim().toLowerCase() } };
      const a = /<answer>([^<]*)<\\/answer>/.exec(input.text);
      if (a) return { state: input.state, action: { kind: 'answer', answer: a[1] } };
      return { state: input.state, action: { kind: 'none', reason: 'no tag' } };
    },`;
  const harness = load(harnessSource({}, hooks));
  const backend = new ScriptedBackend((prompt) => {
    const last = lastMessage(prompt);
    if (/code of alpha\?/.test(last)) return '<lookup>ALPHA</lookup>';
    if (/alpha: K7/.test(last)) return '<answer>K7</answer>';
    return undefined;
  });
  const { trajectories: [t] } = await runEpisodes({ backend, environment: lookupEnv, harness, tasks: [lookupTask('alpha')], samplesPerTask: 1, sampling: SAMPLING, runSeed: 1, step: 0 });
  assert.equal(t.reward, 1, t.stopDetail);
  assert.deepEqual(t.turns[0].action, { kind: 'tool', tool: 'lookup', input: 'alpha' });
  assert.deepEqual(t.modelCalls.map((c) => c.kept), [true, true]);
});

void test('chess reference harness: replacing the context after every opponent reply keeps every call trained', async () => {
  const inst = getDomain('chess').load({ kind: 'synthetic' });
  const env = inst.environment as DomainEnvironment<ChessReference>;
  const task = (inst.splits.harness as EnvTask<ChessReference>[]).find((x) => x.hidden.line.length >= 3);
  assert.ok(task, 'a puzzle with two solver moves');
  let ply = 0;
  const backend = new ScriptedBackend(() => {
    const move = task.hidden.line[ply];
    ply += 2;
    return `<answer>${move}</answer>`;
  });
  const harness = load(readReferenceHarness('chess'));
  const { trajectories: [t] } = await runEpisodes({ backend, environment: env, harness, tasks: [task], samplesPerTask: 1, sampling: SAMPLING, runSeed: 1, step: 0 });
  assert.equal(t.reward, 1, t.stopDetail);
  assert.ok(t.modelCalls.length >= 2);
  // The harness did shorten the context: the second call's prompt no longer holds the first reply.
  const firstReply = decodeTokens(t.modelCalls[0].generatedTokens.filter((x) => x !== SPECIAL_TOKENS.END));
  assert.ok(!decodeTokens(t.modelCalls[1].promptTokens).includes(firstReply), 'the first move left the context');
  assert.ok(t.modelCalls.every((c) => c.kept && c.dropReason === null));
  const examples = trainingExamplesFromTrajectories([t]);
  assert.equal(examples.length, t.modelCalls.length);
  checkWeights(t, examples);
});

void test('a version-1 trajectory line still parses, every call kept (what was trained on it)', () => {
  const v1 = {
    schemaVersion: 1, trajectoryId: 't#0@1', taskId: 't', itemId: 't', sampleIndex: 0, runSeed: 1, step: 1, harnessId: 'h', harnessName: 'h0', domain: 'math',
    modelCalls: [{ turn: 0, seed: 1, promptTokens: [1, 2], generatedTokens: [3, SPECIAL_TOKENS.END], logprobs: [-1, -1], text: 'x', stopReason: 'stop-token' }],
    turns: [], messages: [], finalAnswer: '1', stopReason: 'answer', stopDetail: '', harnessFailure: null, reward: 1, tokenCounts: { prompt: 2, generated: 2 },
  };
  const [t] = trajectoriesFromJsonl(JSON.stringify(v1) + '\n');
  assert.equal(t.modelCalls[0].kept, true);
  assert.equal(t.modelCalls[0].dropReason, null);
  assert.equal(trainingExamplesFromTrajectories([t]).length, 1);
});
