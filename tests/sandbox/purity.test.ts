// No harness state survives from one batch to the next, whatever shape the memory takes (a mutated
// module-level const, a closure over an IIFE's `let`, a Map on a frozen holder, a function object's
// properties), and the purity audit ends an episode whose hook answers differently in a fresh context.
// The chess-like memoriser: a harness that records the moves `continue` events confirm and hints them in
// later episodes gains reward across evaluations when run unsandboxed, and gains nothing in the sandbox.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { HarnessRunner, PhaseCall, PhaseResult } from '../../agent/harness-runner';
import { runEpisodes } from '../../agent/loop';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { SandboxPool } from '../../harness-sandbox/pool';
import { FULL_HOOKS_SOURCE, harnessSource } from '../agent/harness-fixtures';
import { ScriptedBackend, lastMessage } from '../agent/scripted-backend';
import { lookupEnv, lookupTask, sequenceEnv, sequenceTask } from '../agent/toy-env';

const noAudit = new SandboxPool({ limits: { isolateMemoryMb: 32, hookCpuMs: 500, auditEvery: 0 } });
const auditAll = new SandboxPool({ limits: { isolateMemoryMb: 32, hookCpuMs: 500, auditEvery: 1 } });
after(() => Promise.all([noAudit.close(), auditAll.close()]));

const START: PhaseCall = { phase: 'start', input: { task: { id: 'seq/x', question: 'Find the line.', view: {} }, observation: {}, tools: [] } };

/** Ways to keep memory between calls that a syntactic check of module-level `let` does not see. */
const MEMORY_SHAPES: Array<{ name: string; preamble: string; get: string; set: string }> = [
  { name: 'mutated module-level const object', preamble: 'const memo: Record<string, string> = {};', get: 'memo[k]', set: 'memo[k] = v' },
  { name: 'Map.set on a frozen holder', preamble: 'const holder = Object.freeze({ m: new Map<string, string>() });', get: 'holder.m.get(k)', set: 'holder.m.set(k, v)' },
  {
    name: "closure over an IIFE's let",
    preamble: 'const store = (() => { let seen: Record<string, string> = {}; return { get: (k: string) => seen[k], set: (k: string, v: string) => { seen = { ...seen, [k]: v }; } }; })();',
    get: 'store.get(k)',
    set: 'store.set(k, v)',
  },
  { name: 'properties of a module-level function object', preamble: 'function box(): void {}\nconst bag = box as unknown as Record<string, string>;', get: 'bag[k]', set: 'bag[k] = v' },
  { name: 'array pushed at module level', preamble: 'const log: Array<[string, string]> = [];', get: 'log.find((e) => e[0] === k)?.[1]', set: 'log.push([k, v])' },
];

/** Remembers the move a `continue` event confirmed at (task, turn) and hints it (encoded) to later episodes. */
function memoriser(shape: { preamble: string; get: string; set: string }, useMemory = true): string {
  const recall = useMemory ? `((k: string) => ${shape.get})` : '((_k: string) => undefined as string | undefined)';
  return harnessSource(
    { name: 'memoriser', maxTurns: 6, retryBudgets: { formatErrors: 1, illegalActions: 1 } },
    `formatObservation(input) {
      const known = ${recall}(input.task.id + '|0');
      return { state: input.state, text: 'Find the line.' + (known ? ' Known good move index: ' + 'abcde'.indexOf(known) : '') };
    },
    feedback(input) {
      const e = input.event;
      if (e.kind !== 'continue') return { state: input.state, append: [{ role: 'user', content: 'Try again.' }] };
      const k = input.task.id + '|' + input.turn;
      const v = e.answer;
      ${shape.set};
      const known = ${recall}(input.task.id + '|' + (input.turn + 1));
      return { state: input.state, append: [{ role: 'tool', content: e.text + (known ? '. Known good move index: ' + 'abcde'.indexOf(known) : '') }] };
    },`,
    shape.preamble,
  );
}

/**
 * The model follows a hint when it sees one; otherwise it plays a move picked by its seed. The hint is
 * encoded (an index, not the move), as a memoriser would write it to get past the loop's no-injection
 * rule, which refuses an answer that harness-written prompt text spelled out.
 */
const script = (prompt: string, req: { seed: number }) => {
  const hint = /Known good move index: (\d)/.exec(lastMessage(prompt));
  return `<answer>${'abcde'[hint ? Number(hint[1]) : req.seed % 5]}</answer>`;
};
const TASKS = [sequenceTask('p1', ['a', 'b', 'c', 'd', 'e', 'a']), sequenceTask('p2', ['c', 'a', 'e', 'b', 'd', 'd']), sequenceTask('p3', ['e', 'e', 'b', 'c', 'a', 'b'])];
const sampling = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 64, maxEpisodeTokens: 512 };

/** Mean reward of four evaluations with fresh seeds (steps 0..3), all through one runner. */
async function evaluations(runner: HarnessRunner): Promise<number[][]> {
  const out: number[][] = [];
  for (let step = 0; step < 4; step++) {
    const { trajectories } = await runEpisodes({ backend: new ScriptedBackend(script), environment: sequenceEnv, harness: runner, tasks: TASKS, samplesPerTask: 8, sampling, runSeed: 11, step });
    out.push(trajectories.map((t) => t.reward));
  }
  return out;
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

void test('the memoriser works unsandboxed: its reward rises across evaluations (so the sandbox test below can fail)', async () => {
  const inProcess = loadHarnessInProcess(memoriser(MEMORY_SHAPES[0]));
  assert.ok(inProcess.ok);
  const rewards = (await evaluations(inProcess.runner)).map(mean);
  console.log(`memoriser unsandboxed, mean reward per evaluation: ${rewards.map((r) => r.toFixed(3)).join(', ')}`);
  assert.ok(rewards[3] > rewards[0] + 0.2, `unsandboxed rewards per evaluation: ${rewards.join(', ')}`);
});

for (const shape of MEMORY_SHAPES) {
  void test(`no reward from memory across episodes or evaluations: ${shape.name}`, async () => {
    const control = loadHarnessInProcess(memoriser(shape, false));
    assert.ok(control.ok);
    const expected = await evaluations(control.runner);
    for (const pool of [noAudit, auditAll]) {
      const loaded = await pool.loadHarness(memoriser(shape));
      assert.ok(loaded.ok, loaded.ok ? '' : loaded.failure.reason);
      const got = await evaluations(loaded.runner);
      // Episode by episode, never above the same harness without memory (a flagged episode scores 0).
      got.forEach((rewards, e) => rewards.forEach((r, i) => assert.ok(r <= expected[e][i], `evaluation ${e} episode ${i}: ${r} > ${expected[e][i]}`)));
      console.log(`${shape.name}, audit every ${pool.options.limits.auditEvery}: sandboxed ${got.map(mean).map((r) => r.toFixed(3)).join(', ')}; control ${expected.map(mean).map((r) => r.toFixed(3)).join(', ')}`);
      assert.deepEqual(got.map(mean), expected.map(mean), `rewards per evaluation vs the memory-less control (audit every ${pool.options.limits.auditEvery})`);
    }
  });
}

void test('each batch starts from a fresh context: a module-level counter restarts at 1', async () => {
  const loaded = await noAudit.loadHarness(harnessSource({}, 'setup() { calls.n++; return { state: calls.n }; },', 'const calls = { n: 0 };'));
  assert.ok(loaded.ok);
  for (let batch = 0; batch < 3; batch++) {
    const results: PhaseResult[] = await loaded.runner.runPhases([START, START, START]);
    assert.deepEqual(
      results.map((r) => (r.ok && 'state' in r.output ? r.output.state : r)),
      [1, 2, 3],
      'within a batch the context is shared (the audit is what catches this), across batches it is not',
    );
  }
});

void test('purity audit: a hook whose result depends on earlier calls is a contract violation with a reason', async () => {
  const loaded = await auditAll.loadHarness(harnessSource({}, 'setup() { calls.n++; return { state: calls.n }; },', 'const calls = { n: 0 };'));
  assert.ok(loaded.ok);
  const results = await loaded.runner.runPhases([START, START, START, START]);
  assert.ok(results[0].ok, 'the first call of a batch sees a fresh context, like the audit');
  for (const r of results.slice(1)) {
    assert.ok(!r.ok);
    assert.equal(r.failure.kind, 'contract-violation');
    assert.equal(r.failure.hook, 'setup');
    assert.match(r.failure.reason, /purity audit: setup returned a different result .* fresh context \(first difference at character \d+/);
  }
});

void test('purity audit: a hook that fails only in a fresh context is a contract violation', async () => {
  const loaded = await auditAll.loadHarness(harnessSource({}, "setup() { seen.n++; if (seen.n === 1) throw new Error('cold'); return { state: 1 }; },", 'const seen = { n: 0 };'));
  assert.ok(loaded.ok);
  const results = await loaded.runner.runPhases([START, START]);
  assert.ok(!results[0].ok && results[0].failure.kind === 'runtime-error');
  assert.ok(!results[1].ok && results[1].failure.kind === 'contract-violation');
  assert.match(results[1].failure.reason, /succeeded here but failed when re-run .* cold/);
});

void test('purity audit: the sample is seeded (same seed, same calls) and about 1 in N', async () => {
  const impure = harnessSource({}, 'setup() { calls.n++; return { state: calls.n }; },', 'const calls = { n: 0 };');
  const flagged = async (seed: number) => {
    const pool = new SandboxPool({ limits: { isolateMemoryMb: 32, hookCpuMs: 500, auditEvery: 16, auditSeed: seed } });
    try {
      const loaded = await pool.loadHarness(impure);
      assert.ok(loaded.ok);
      const results = await loaded.runner.runPhases(Array.from({ length: 320 }, () => START));
      return results.flatMap((r, i) => (r.ok ? [] : [i]));
    } finally {
      await pool.close();
    }
  };
  const a = await flagged(1);
  const b = await flagged(1);
  const c = await flagged(2);
  assert.deepEqual(a, b, 'the same seed audits the same calls');
  assert.notDeepEqual(a, c, 'another seed audits other calls');
  assert.ok(a.length >= 6 && a.length <= 40, `${a.length} of 320 calls audited and flagged (expected about 20)`);
});

void test('purity audit on every call: a pure harness gives the same trajectories as unsandboxed', async () => {
  const scriptLookup = (prompt: string, req: { seed: number }) => {
    const q = /Q: What is the code of (\w+)\?/.exec(prompt);
    const last = lastMessage(prompt);
    if (last.startsWith('Result: ')) return `<answer>${last.split(': ')[2]}</answer>`;
    return req.seed % 2 === 0 && q ? `<lookup>${q[1]}</lookup>` : 'thinking';
  };
  const tasks = [lookupTask('alpha'), lookupTask('bravo')];
  const sandboxed = await auditAll.loadHarness(FULL_HOOKS_SOURCE);
  assert.ok(sandboxed.ok);
  const inProcess = loadHarnessInProcess(FULL_HOOKS_SOURCE);
  assert.ok(inProcess.ok);
  const common = { environment: lookupEnv, tasks, samplesPerTask: 8, sampling: { ...sampling, maxEpisodeTokens: 1024 }, runSeed: 3, step: 1 };
  const a = await runEpisodes({ ...common, backend: new ScriptedBackend(scriptLookup), harness: sandboxed.runner });
  const b = await runEpisodes({ ...common, backend: new ScriptedBackend(scriptLookup), harness: inProcess.runner });
  assert.deepEqual(a.trajectories, b.trajectories);
  assert.ok(a.trajectories.every((t) => t.stopReason !== 'contract-violation'));
});
