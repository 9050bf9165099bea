// The sandboxed runner against the in-process one: identical trajectories from the same loop, at most
// one IPC message per phase per turn for the whole batch, and the validator's full violation report.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { HarnessRunner } from '../../agent/harness-runner';
import { runEpisodes } from '../../agent/loop';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { SandboxPool } from '../../harness-sandbox/pool';
import { validateHarnessSource } from '../../harness-sandbox/validate';
import { FULL_HOOKS_SOURCE, harnessSource } from '../agent/harness-fixtures';
import { ScriptedBackend, lastMessage } from '../agent/scripted-backend';
import { lookupEnv, lookupTask } from '../agent/toy-env';

const pool = new SandboxPool({ limits: { isolateMemoryMb: 32, hookCpuMs: 500 } });
after(() => pool.close());

function counting(runner: HarnessRunner): { runner: HarnessRunner; batches: number[] } {
  const batches: number[] = [];
  return { batches, runner: { manifest: runner.manifest, runPhases: (calls) => (batches.push(calls.length), runner.runPhases(calls)) } };
}

void test('sandboxed and in-process runs of the same harness give identical trajectories; one IPC message per phase per turn', async () => {
  const script = (prompt: string, req: { seed: number }) => {
    const last = lastMessage(prompt);
    const q = /Q: What is the code of (\w+)\?/.exec(prompt);
    if (last.startsWith('Result: ')) return req.seed % 3 === 0 ? 'no idea' : `<answer>${last.split(': ')[2]}</answer>`;
    if (last === 'Use the tags.') return req.seed % 5 < 2 ? 'still thinking' : `<answer>${q?.[1] ?? 'x'}</answer>`;
    if (q) return req.seed % 2 === 0 ? `<lookup>${q[1]}</lookup>` : 'thinking...';
    return undefined;
  };
  const tasks = [lookupTask('alpha'), lookupTask('bravo'), lookupTask('charlie'), lookupTask('delta')];
  const sampling = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 64, maxEpisodeTokens: 512 };

  const sandboxed = await pool.loadHarness(FULL_HOOKS_SOURCE);
  assert.ok(sandboxed.ok);
  const inProcess = loadHarnessInProcess(FULL_HOOKS_SOURCE);
  assert.ok(inProcess.ok);
  const a = counting(sandboxed.runner);
  const b = counting(inProcess.runner);
  const ra = await runEpisodes({ backend: new ScriptedBackend(script), environment: lookupEnv, harness: a.runner, tasks, samplesPerTask: 8, sampling, runSeed: 5, step: 2 });
  const rb = await runEpisodes({ backend: new ScriptedBackend(script), environment: lookupEnv, harness: b.runner, tasks, samplesPerTask: 8, sampling, runSeed: 5, step: 2 });
  assert.deepEqual(ra.trajectories, rb.trajectories);
  const stops = new Set(ra.trajectories.map((t) => t.stopReason));
  assert.ok(stops.size >= 2, `the script should produce varied endings, got ${[...stops].join(', ')}`);
  assert.deepEqual(new Set(ra.trajectories.map((t) => t.reward)), new Set([0, 1]));
  // start + (parse, react) per turn: never more than 1 + 2 x turns messages for 32 episodes.
  assert.equal(a.batches[0], 32, 'the start phase of all 32 episodes is one message');
  assert.ok(a.batches.length <= 1 + 2 * ra.stats.turns, `${a.batches.length} messages for ${ra.stats.turns} turns`);
  assert.deepEqual(a.batches, b.batches);
});

void test('the validator reports every violation in a harness file, with lines', async () => {
  const bad = harnessSource(
    { maxTurns: 99, retryBudgets: { formatErrors: 20, illegalActions: 0 }, toolParams: { lookup: { maxChars: 500 }, search: { topK: 3 } } },
    `async setup() { return { state: null }; },
    parseAction(input) { const t = process.env.X; return { state: input.state, action: { kind: 'none', reason: String(t) } }; },
    bogus() { return 1; },`,
    "import { readFileSync } from 'fs';",
  ).replace('const harness: HarnessDefinition', 'const harness: any');
  const report = await validateHarnessSource(pool, bad, lookupEnv.tools);
  assert.equal(report.ok, false);
  const wheres = report.violations.map((v) => v.where);
  for (const w of ['import', 'async', 'global', 'hooks.bogus', 'config.maxTurns', 'config.retryBudgets.formatErrors']) {
    assert.ok(wheres.includes(w), `missing ${w} in ${JSON.stringify(report.violations)}`);
  }
  assert.ok(report.violations.find((v) => v.where === 'import')?.line === 2, 'static findings carry line numbers');
  assert.equal(report.failure?.kind, 'compile-error');

  assert.ok(wheres.includes('type'), 'type errors are reported too');

  const wrongShape = harnessSource({}, "shouldStop() { return { stop: 'no' }; },");
  const typed = await validateHarnessSource(pool, wrongShape, lookupEnv.tools);
  assert.deepEqual(typed.violations.map((v) => v.where), ['type']);
  assert.match(typed.violations[0].message, /Type 'string' is not assignable to type 'boolean'/);

  const toolsOnly = harnessSource({ toolParams: { lookup: { maxChars: 500 }, search: { topK: 3 } } });
  const r2 = await validateHarnessSource(pool, toolsOnly, lookupEnv.tools);
  assert.deepEqual(r2.violations.map((v) => v.where).sort(), ['config.toolParams.lookup.maxChars', 'config.toolParams.search']);
  assert.equal(r2.failure?.kind, 'contract-violation');

  const good = await validateHarnessSource(pool, FULL_HOOKS_SOURCE, lookupEnv.tools);
  assert.deepEqual(good.violations, []);
  assert.ok(good.ok && good.manifest);
  assert.deepEqual([...good.manifest.hooks].sort(), ['feedback', 'formatObservation', 'parseAction', 'setup', 'shouldStop']);
});

void test('two harnesses interleaved on one process with room for one isolate: evicted isolates reload, results stay right', async () => {
  const tight = new SandboxPool({ maxIsolates: 1, limits: { isolateMemoryMb: 32, hookCpuMs: 500 } });
  try {
    const a = await tight.loadHarness(harnessSource({ name: 'a' }, "formatObservation(input) { return { state: 'a', text: 'A: ' + input.task.question }; },"));
    const b = await tight.loadHarness(harnessSource({ name: 'b' }, "formatObservation(input) { return { state: 'b', text: 'B: ' + input.task.question }; },"));
    assert.ok(a.ok && b.ok);
    const call = { phase: 'start' as const, input: { task: { id: 't', question: 'q?', view: {} }, observation: {}, tools: [] } };
    const rounds = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? a : b).runner.runPhases([call, call])));
    rounds.forEach((results, i) => {
      for (const r of results) {
        assert.ok(r.ok && 'messages' in r.output);
        assert.equal(r.output.messages[1].content, `${i % 2 === 0 ? 'A' : 'B'}: q?`);
      }
    });
    assert.ok(tight.isolateLoads >= 6, `each alternation must reload the evicted isolate, saw ${tight.isolateLoads} loads`);
    assert.equal(tight.restarts, 0);
  } finally {
    await tight.close();
  }
});

void test('paper-sized batch: 32 prompts x 8 samples through the sandbox, one generate call and at most two IPC messages per turn', async () => {
  const names = ['alpha', 'bravo', 'charlie', 'delta'];
  const tasks = Array.from({ length: 32 }, (_, k) => ({ ...lookupTask(names[k % 4]), id: `lookup/${names[k % 4]}/${k}` }));
  const loaded = await pool.loadHarness(FULL_HOOKS_SOURCE);
  assert.ok(loaded.ok);
  const c = counting(loaded.runner);
  const backend = new ScriptedBackend((prompt) => {
    const last = lastMessage(prompt);
    const q = /Q: What is the code of (\w+)\?/.exec(last);
    if (q) return `<lookup>${q[1]}</lookup>`;
    const r = /^Result: \w+: (\w+)$/.exec(last);
    return r ? `<answer>${r[1]}</answer>` : undefined;
  });
  const t0 = performance.now();
  const { trajectories, stats } = await runEpisodes({ backend, environment: lookupEnv, harness: c.runner, tasks, samplesPerTask: 8, sampling: { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 64, maxEpisodeTokens: 512 }, runSeed: 9, step: 0 });
  const ms = performance.now() - t0;
  assert.equal(trajectories.length, 256);
  assert.ok(trajectories.every((t) => t.reward === 1));
  assert.deepEqual(backend.batches.map((b) => b.length), [256, 256]);
  assert.deepEqual(c.batches, [256, 256, 256, 256], 'start, parse, react, parse: each one message for all 256 episodes');
  assert.equal(stats.turns, 2);
  console.log(`256 episodes x 2 turns through the sandbox: ${ms.toFixed(0)} ms in all (scripted model)`);
});

void test('in-process and sandboxed runners both hand hooks copies: mutating the input changes nothing outside', async () => {
  const mutator = harnessSource({}, `feedback(input) {
      input.messages.push({ role: 'user', content: 'smuggled' });
      input.messages[0].content = 'rewritten';
      return { state: null, append: [{ role: 'tool', content: 'ok' }] };
    },`);
  const script = (prompt: string) => (prompt.includes('<|tool|>ok') ? '<answer>K7</answer>' : '<lookup>alpha</lookup>');
  const run = async (runner: HarnessRunner) =>
    (await runEpisodes({ backend: new ScriptedBackend(script), environment: lookupEnv, harness: runner, tasks: [lookupTask('alpha')], samplesPerTask: 1, sampling: { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 64, maxEpisodeTokens: 512 }, runSeed: 1, step: 0 })).trajectories;
  const inProcess = loadHarnessInProcess(mutator);
  const sandboxed = await pool.loadHarness(mutator);
  assert.ok(inProcess.ok && sandboxed.ok);
  const a = await run(inProcess.runner);
  const b = await run(sandboxed.runner);
  assert.deepEqual(a, b);
  assert.equal(a[0].messages[0].content, 'You answer questions.');
  assert.ok(!a[0].messages.some((m) => m.content === 'smuggled'));
});
