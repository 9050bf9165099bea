// The agent loop on the toy environments with an in-process harness: actions, tools, batching, drop-out,
// seeds, provenance, retry budgets, multi-step submissions and every stop reason.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DomainEnvironment, EnvTask } from '../../agent/environment';
import type { HarnessRunner } from '../../agent/harness-runner';
import type { RolloutSampling } from '../../agent/loop';
import { AgentConfigError } from '../../agent/errors';
import { runEpisodes } from '../../agent/loop';
import { deriveSeed } from '../../agent/seeds';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { FULL_HOOKS_SOURCE, harnessSource } from './harness-fixtures';
import type { Script } from './scripted-backend';
import { ScriptedBackend, lastMessage } from './scripted-backend';
import { lookupEnv, lookupTask, sequenceEnv, sequenceTask } from './toy-env';

const SAMPLING: RolloutSampling = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 64, maxEpisodeTokens: 512 };

function harness(source: string): HarnessRunner {
  const r = loadHarnessInProcess(source);
  if (!r.ok) throw new Error(`fixture harness invalid: ${JSON.stringify(r.violations)}`);
  return r.runner;
}

/** Looks the name up, then answers with the code from the tool output. */
const lookupScript: Script = (prompt) => {
  const last = lastMessage(prompt);
  const q = /code of (\w+)\?/.exec(last);
  if (q) return `Let me check. <lookup>${q[1]}</lookup>`;
  const r = /(\w+): (\w+)/.exec(last);
  if (r) return `The code is <answer>${r[2]}</answer>`;
  return undefined;
};

async function run<H>(env: DomainEnvironment<H>, tasks: EnvTask<H>[], h: HarnessRunner, script: Script, extra: Partial<{ samples: number; sampling: RolloutSampling; maxContext: number; step: number }> = {}) {
  const backend = new ScriptedBackend(script, extra.maxContext ?? 1024);
  const result = await runEpisodes({ backend, environment: env, harness: h, tasks, samplesPerTask: extra.samples ?? 1, sampling: extra.sampling ?? SAMPLING, runSeed: 7, step: extra.step ?? 3 });
  return { ...result, backend };
}

void test('a tool call then an answer: rewarded, and every model call, tool call and token count recorded', async () => {
  const { trajectories, backend, stats } = await run(lookupEnv, [lookupTask('alpha'), lookupTask('bravo')], harness(harnessSource()), lookupScript, { samples: 2 });
  assert.equal(trajectories.length, 4);
  assert.deepEqual(backend.batches.map((b) => b.length), [4, 4], 'one batched generate call per turn');
  assert.equal(stats.generateCalls, 2);
  for (const t of trajectories) {
    assert.equal(t.reward, 1);
    assert.equal(t.stopReason, 'answer');
    assert.equal(t.modelCalls.length, 2);
    assert.equal(t.turns[0].tool?.tool, 'lookup');
    assert.equal(t.turns[0].tool?.params.maxChars, 40, 'spec default when the harness sets nothing');
    assert.match(t.turns[0].tool?.text ?? '', /^(alpha: K7|bravo: Q2)$/);
    assert.equal(t.turns[1].submit?.outcome, 'final');
    assert.equal(t.finalAnswer, t.taskId === 'lookup/alpha' ? 'k7' : 'q2');
    const [c0, c1] = t.modelCalls;
    assert.equal(c0.logprobs.length, c0.generatedTokens.length);
    assert.deepEqual(c1.promptTokens.slice(0, c0.promptTokens.length - 1), c0.promptTokens.slice(0, -1), 'turn 2 prompt extends turn 1');
    assert.equal(t.tokenCounts.generated, c0.generatedTokens.length + c1.generatedTokens.length);
    assert.equal(t.tokenCounts.prompt, c0.promptTokens.length + c1.promptTokens.length);
    assert.equal(t.messages.at(-1)?.role, 'assistant');
    assert.equal(t.messages[0].content, 'You answer questions.');
  }
});

void test('finished episodes drop out of later generate batches', async () => {
  // Seed parity decides: even seeds answer at once (episode ends), odd seeds look up first.
  const script: Script = (prompt, req) => {
    const last = lastMessage(prompt);
    if (/code of alpha/.test(last) && req.seed % 2 === 0) return '<answer>K7</answer>';
    return lookupScript(prompt, req);
  };
  const { backend, trajectories } = await run(lookupEnv, [lookupTask('alpha')], harness(harnessSource()), script, { samples: 16 });
  const direct = trajectories.filter((t) => t.modelCalls.length === 1).length;
  assert.ok(direct > 0 && direct < 16, `seed parity should split 16 samples, got ${direct} direct`);
  assert.deepEqual(backend.batches.map((b) => b.length), [16, 16 - direct]);
});

void test('seeds derive from (run seed, step, prompt id, sample, turn): replays are identical, steps differ', async () => {
  const h = harness(harnessSource());
  const a = await run(lookupEnv, [lookupTask('alpha'), lookupTask('charlie')], h, lookupScript, { samples: 3 });
  const b = await run(lookupEnv, [lookupTask('alpha'), lookupTask('charlie')], h, lookupScript, { samples: 3 });
  assert.deepEqual(a.trajectories, b.trajectories);
  const seeds = a.trajectories.flatMap((t) => t.modelCalls.map((c) => c.seed));
  assert.equal(new Set(seeds).size, seeds.length, 'every (task, sample, turn) has its own seed');
  const t0 = a.trajectories[0];
  assert.equal(t0.modelCalls[1].seed, deriveSeed({ runSeed: 7, step: 3, promptId: 'lookup/alpha', sampleIndex: 0, turn: 1 }));
  const c = await run(lookupEnv, [lookupTask('alpha')], h, lookupScript, { step: 4 });
  assert.notEqual(c.trajectories[0].modelCalls[0].seed, t0.modelCalls[0].seed);
});

void test('provenance: an answer the model never generated is a contract violation with reward 0', async () => {
  const cheating = harnessSource({}, `parseAction(input) { return { state: input.state, action: { kind: 'answer', answer: 'K7' } }; },`);
  const { trajectories } = await run(lookupEnv, [lookupTask('alpha')], harness(cheating), () => 'I have no idea.');
  assert.equal(trajectories[0].stopReason, 'contract-violation');
  assert.equal(trajectories[0].reward, 0);
  assert.equal(trajectories[0].harnessFailure?.kind, 'contract-violation');
  assert.match(trajectories[0].stopDetail, /has no answer span in the model's turn/);
  // The same harness is fine when the model's answer span holds that answer (after normalisation: case, spaces).
  const honest = await run(lookupEnv, [lookupTask('alpha')], harness(cheating), () => 'maybe <answer>  k7 </answer>');
  assert.equal(honest.trajectories[0].stopReason, 'answer');
  assert.equal(honest.trajectories[0].reward, 1);
});

void test('all five hooks and the helpers drive the loop; tool params come from the harness', async () => {
  const { trajectories } = await run(lookupEnv, [lookupTask('delta')], harness(FULL_HOOKS_SOURCE), (prompt) => {
    if (prompt.includes('Q: What is the code of delta?') && !prompt.includes('Result:')) return '<lookup> delta </lookup>';
    if (prompt.includes('Result: delta: M4')) return '<answer>M4</answer>';
    return undefined;
  });
  const t = trajectories[0];
  assert.equal(t.reward, 1);
  assert.equal(t.turns[0].tool?.input, 'delta');
  assert.equal(t.turns[0].tool?.params.maxChars, 30);
  assert.deepEqual(t.turns[0].feedback, [{ role: 'tool', content: 'Result: delta: M4' }]);
});

void test('multi-step moves: continue with the reply, illegal retried within budget, wrong legal move ends', async () => {
  const solve: Script = (prompt) => (prompt.includes('opponent played b') ? '<answer>c</answer>' : '<answer>a</answer>');
  const solved = await run(sequenceEnv, [sequenceTask('x', ['a', 'b', 'c', 'd'])], harness(harnessSource()), solve);
  assert.equal(solved.trajectories[0].reward, 1);
  assert.deepEqual(solved.trajectories[0].turns.map((t) => t.submit?.outcome), ['continue', 'final']);

  const illegalOnce: Script = (prompt) => (prompt.includes('Illegal:') ? '<answer>e</answer>' : '<answer>z</answer>');
  const wrong = await run(sequenceEnv, [sequenceTask('y', ['a', 'b'])], harness(harnessSource()), illegalOnce);
  assert.deepEqual(wrong.trajectories[0].turns.map((t) => t.submit?.outcome), ['illegal', 'final']);
  assert.equal(wrong.trajectories[0].reward, 0, 'a legal wrong move ends the episode unrewarded');

  const alwaysIllegal = await run(sequenceEnv, [sequenceTask('z', ['a', 'b'])], harness(harnessSource()), () => '<answer>z</answer>');
  assert.equal(alwaysIllegal.trajectories[0].stopReason, 'illegal-actions');
  assert.equal(alwaysIllegal.trajectories[0].modelCalls.length, 2, 'budget 1: one retry, then the episode ends');
});

void test('stop reasons: format errors, turn limit, token budget, context full, stop rule, harness failure', async () => {
  const noTags = await run(lookupEnv, [lookupTask('alpha')], harness(harnessSource({ retryBudgets: { formatErrors: 2, illegalActions: 0 } })), () => 'hmm');
  assert.equal(noTags.trajectories[0].stopReason, 'format-errors');
  assert.equal(noTags.trajectories[0].modelCalls.length, 3);

  const loops: Script = (prompt) => (/code of|: /.test(lastMessage(prompt)) ? '<lookup>alpha</lookup>' : undefined);
  const limit = await run(lookupEnv, [lookupTask('alpha')], harness(harnessSource({ maxTurns: 3 })), loops);
  assert.equal(limit.trajectories[0].stopReason, 'turn-limit');
  assert.equal(limit.trajectories[0].modelCalls.length, 3);

  const budget = await run(lookupEnv, [lookupTask('alpha')], harness(harnessSource()), loops, { sampling: { ...SAMPLING, maxEpisodeTokens: 30 } });
  assert.equal(budget.trajectories[0].stopReason, 'token-budget');
  assert.ok(budget.trajectories[0].tokenCounts.generated <= 30);

  const full = await run(lookupEnv, [lookupTask('alpha')], harness(harnessSource()), loops, { maxContext: 120 });
  assert.equal(full.trajectories[0].stopReason, 'context-full');
  for (const c of full.trajectories[0].modelCalls) assert.ok(c.promptTokens.length + c.generatedTokens.length <= 120);

  const stopper = harnessSource({}, `shouldStop(input) { return { stop: input.turn >= 2, reason: 'enough' }; },`);
  const stopped = await run(lookupEnv, [lookupTask('alpha')], harness(stopper), loops);
  assert.equal(stopped.trajectories[0].stopReason, 'stop-rule');
  assert.equal(stopped.trajectories[0].stopDetail, 'enough');

  const throws = harnessSource({}, `feedback(input) { if (input.task.id.endsWith('alpha')) throw new Error('boom'); return { state: null, append: [{ role: 'tool', content: 'ok' }] }; },`);
  const mixed = await run(lookupEnv, [lookupTask('alpha'), lookupTask('bravo')], harness(throws), (p) => (lastMessage(p) === 'ok' ? '<answer>Q2</answer>' : lookupScript(p, {} as never)));
  assert.equal(mixed.trajectories[0].stopReason, 'harness-failure');
  assert.equal(mixed.trajectories[0].harnessFailure?.kind, 'runtime-error');
  assert.equal(mixed.trajectories[1].reward, 1, 'a failing episode does not affect the rest of the batch');
});

void test('tool parameters outside the tool spec end every episode as a contract violation before any model call', async () => {
  const bad = harnessSource({ toolParams: { lookup: { maxChars: 1000 }, search: { topK: 3 } } });
  const { trajectories, backend } = await run(lookupEnv, [lookupTask('alpha')], harness(bad), () => undefined);
  assert.equal(backend.batches.length, 0);
  assert.equal(trajectories[0].stopReason, 'contract-violation');
  assert.match(trajectories[0].stopDetail, /maxChars: must be an integer in \[1, 100\], got 1000/);
  assert.match(trajectories[0].stopDetail, /unknown tool "search"/);
});

void test('invalid rollout settings are a config error naming every problem, before any model call', async () => {
  const backend = new ScriptedBackend(() => undefined);
  await assert.rejects(
    runEpisodes({ backend, environment: lookupEnv, harness: harness(harnessSource()), tasks: [lookupTask('alpha')], samplesPerTask: 0, sampling: { ...SAMPLING, topP: 0, maxNewTokensPerTurn: 0 }, runSeed: 1, step: 0 }),
    (e: unknown) => e instanceof AgentConfigError && /samplesPerTask/.test(e.message) && /topP/.test(e.message) && /maxNewTokensPerTurn/.test(e.message),
  );
  assert.equal(backend.batches.length, 0);
});
