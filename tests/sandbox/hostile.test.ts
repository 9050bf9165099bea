// The hostile-harness suite: every case ends as its typed result within its limit, the worker (this
// process) keeps serving, and a healthy harness evaluated right after each case works. Also: copies
// across the boundary, an answer the model never generated, and the child's resident-memory cap.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { HarnessRunner, PhaseCall, PhaseResult } from '../../agent/harness-runner';
import { runEpisodes } from '../../agent/loop';
import { ALLOWED_IMPORTS } from '../../harness-sandbox/compile';
import { RUNTIME_IMPORTS } from '../../harness-sandbox/helpers-source';
import { SandboxPool } from '../../harness-sandbox/pool';
import { FULL_HOOKS_SOURCE, harnessSource } from '../agent/harness-fixtures';
import { ScriptedBackend } from '../agent/scripted-backend';
import { lookupEnv, lookupTask } from '../agent/toy-env';
import { HOSTILE_CASES } from './hostile-cases';
import { RUNTIME_CASES } from './hostile-runtime-cases';

const HOOK_CPU_MS = 250;
const pool = new SandboxPool({ limits: { isolateMemoryMb: 32, hookCpuMs: HOOK_CPU_MS } });
after(() => pool.close());

const START: PhaseCall = { phase: 'start', input: { task: { id: 'lookup/alpha', question: 'What is the code of alpha?', view: { name: 'alpha' } }, observation: {}, tools: [...lookupEnv.tools] } };

async function loadAndStart(source: string): Promise<{ stage: 'load' | 'call'; result: PhaseResult; runner?: HarnessRunner }> {
  const loaded = await pool.loadHarness(source);
  if (!loaded.ok) return { stage: 'load', result: { ok: false, failure: loaded.failure } };
  const [result] = await loaded.runner.runPhases([START]);
  return { stage: 'call', result, runner: loaded.runner };
}

async function assertHealthyHarnessWorks(): Promise<void> {
  const { result } = await loadAndStart(FULL_HOOKS_SOURCE);
  assert.ok(result.ok, `healthy harness failed: ${JSON.stringify(result)}`);
  assert.ok('messages' in result.output);
  assert.match(result.output.messages[1].content, /^Q: What is the code of alpha\?/);
}

void test('warm-up: the sandbox process starts and a healthy harness works', async () => {
  await pool.warmUp();
  assert.ok(pool.pids()[0] !== undefined, 'warmUp starts the child');
  await assertHealthyHarnessWorks();
});

const timings: Array<{ name: string; kind: string; ms: number }> = [];

const CASES = [...HOSTILE_CASES, ...RUNTIME_CASES];

for (const c of CASES) {
  void test(`hostile: ${c.name} -> ${c.expect}`, async () => {
    const t0 = performance.now();
    const { stage, result } = await loadAndStart(c.source);
    const ms = performance.now() - t0;
    assert.equal(result.ok, false, `expected ${c.expect}, got a successful result`);
    if (result.ok) return;
    timings.push({ name: c.name, kind: result.failure.kind, ms: Math.round(ms) });
    assert.equal(result.failure.kind, c.expect, `reason: ${result.failure.reason}`);
    assert.equal(stage, c.stage, `stopped at ${stage}: ${result.failure.reason}`);
    if (c.reason) assert.match(result.failure.reason, c.reason);
    const cpu = /used (\d+) ms of CPU/.exec(result.failure.reason);
    if (result.failure.kind === 'timeout' && cpu) {
      // A timeout means the CPU budget was used; on a re-run under load the overshoot is bounded by that
      // attempt's wall allowance (at most 32 limits), never open-ended.
      assert.ok(Number(cpu[1]) >= 0.95 * HOOK_CPU_MS && Number(cpu[1]) <= 32 * HOOK_CPU_MS, `CPU used ${cpu[1]} ms vs limit ${HOOK_CPU_MS} ms`);
    }
    const bound = 1_000 + c.cpuLimits * HOOK_CPU_MS;
    assert.ok(ms <= bound, `took ${ms.toFixed(0)} ms, bound ${bound} ms`);
    await assertHealthyHarnessWorks();
  });
}

void test('hostile suite summary: no sandbox process died, timings printed', () => {
  assert.equal(timings.length, CASES.length);
  assert.equal(pool.restarts, 0, 'isolate-level failures never cost a process');
  console.log(`hostile suite (hook CPU limit ${HOOK_CPU_MS} ms, isolate heap 32 MiB):`);
  for (const t of timings) console.log(`  ${t.kind.padEnd(18)} ${String(t.ms).padStart(5)} ms  ${t.name}`);
  const slowest = new Map<string, { ms: number; name: string }>();
  for (const t of timings) if ((slowest.get(t.kind)?.ms ?? -1) < t.ms) slowest.set(t.kind, t);
  console.log('slowest containment per failure kind (load and call, then the typed result):');
  for (const [kind, t] of slowest) console.log(`  ${kind.padEnd(18)} ${String(t.ms).padStart(5)} ms  ${t.name}`);
});

void test('hostile: mutating passed-in data and its prototypes changes only the isolate copy', async () => {
  const src = harnessSource({}, `setup(input) {
      (input.task.view as Record<string, unknown>).name = 'tampered';
      Object.setPrototypeOf(input.observation, { injected: true });
      input.tools.length = 0;
      return { state: { saw: input.task.view.name } };
    },`);
  const loaded = await pool.loadHarness(src);
  assert.ok(loaded.ok);
  const call = structuredClone(START);
  const [r] = await loaded.runner.runPhases([call]);
  assert.ok(r.ok);
  assert.deepEqual(call, START, 'the host objects are untouched');
  assert.deepEqual(r.output.state, { saw: 'tampered' });
  assert.equal(Object.getPrototypeOf(START.input), Object.prototype);
});

void test('hostile: an answer the model never generated ends as contract-violation through the sandbox', async () => {
  const loaded = await pool.loadHarness(harnessSource({}, "parseAction(input) { return { state: input.state, action: { kind: 'answer', answer: 'K7' } }; },"));
  assert.ok(loaded.ok);
  const backend = new ScriptedBackend(() => 'I do not know.');
  const { trajectories } = await runEpisodes({ backend, environment: lookupEnv, harness: loaded.runner, tasks: [lookupTask('alpha')], samplesPerTask: 2, sampling: { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 32, maxEpisodeTokens: 128 }, runSeed: 1, step: 0 });
  for (const t of trajectories) {
    assert.equal(t.stopReason, 'contract-violation');
    assert.equal(t.reward, 0);
  }
});

void test('hostile: a child over its resident-memory cap is killed (memory-limit) and replaced; the worker keeps serving', async () => {
  // The isolate may grow to 512 MiB, the process only to 300 MiB: the process cap is what must fire.
  const small = new SandboxPool({ rssCapMb: 300, rssPollMs: 20, limits: { isolateMemoryMb: 512, hookCpuMs: 5_000 } });
  try {
    const bomb = await small.loadHarness(harnessSource({}, 'setup() { const a: Uint8Array[] = []; for (let i = 0; i < 400; i++) a.push(new Uint8Array(1 << 20).fill(1)); return { state: a.length }; },'));
    assert.ok(bomb.ok);
    const firstPid = small.pids()[0];
    const t0 = performance.now();
    const [r] = await bomb.runner.runPhases([START]);
    assert.ok(!r.ok);
    assert.equal(r.failure.kind, 'memory-limit');
    assert.match(r.failure.reason, /resident-memory cap of 300 MiB/);
    assert.ok(performance.now() - t0 < 10_000);
    assert.equal(small.restarts, 1);
    const healthy = await small.loadHarness(FULL_HOOKS_SOURCE);
    assert.ok(healthy.ok);
    const [ok] = await healthy.runner.runPhases([START]);
    assert.ok(ok.ok, 'a fresh child serves the next harness');
    assert.notEqual(small.pids()[0], firstPid);
  } finally {
    await small.close();
  }
});

void test('hostile: feedback flooding the conversation is a bad return value, not a giant IPC reply', async () => {
  const flood = harnessSource({}, "feedback(input) { const m = { role: 'tool' as const, content: 'x'.repeat(60000) }; return { state: null, replace: Array.from({ length: 15 }, () => m) }; },");
  const loaded = await pool.loadHarness(flood);
  assert.ok(loaded.ok);
  const react: PhaseCall = {
    phase: 'react',
    input: { task: START.input.task, state: null, turn: 0, event: { kind: 'format-error', reason: 'x', formatErrorsLeft: 1 }, messages: [{ role: 'user', content: 'hi' }], tools: [], observation: {} },
  };
  const [r] = await loaded.runner.runPhases([react]);
  assert.ok(!r.ok);
  assert.equal(r.failure.kind, 'bad-return-value');
  assert.match(r.failure.reason, /conversation 15 messages \/ 900000 characters/);
});

void test('hostile: a V8 out-of-memory of the sandbox process itself is a memory-limit result; the worker keeps serving', async () => {
  // Each result is legal (under every per-call cap) but 500 of them (30 MB of strings, then the reply's
  // JSON) overflow a 32 MiB child heap.
  const tiny = new SandboxPool({ childHeapMb: 32, limits: { isolateMemoryMb: 64, hookCpuMs: 1_000 } });
  try {
    const big = await tiny.loadHarness(harnessSource({}, "setup(input) { return { state: input.task.id + 'x'.repeat(60000) }; },"));
    assert.ok(big.ok);
    const calls = Array.from({ length: 500 }, (_, i): PhaseCall => ({ phase: 'start', input: { ...START.input, task: { ...START.input.task, id: `t${i}` } } }) as PhaseCall);
    const results = await big.runner.runPhases(calls);
    assert.ok(results.every((r) => !r.ok && r.failure.kind === 'memory-limit'), JSON.stringify(results[0]).slice(0, 300));
    assert.equal(tiny.restarts, 1);
    const [ok] = await big.runner.runPhases([START]);
    assert.ok(ok.ok, 'a fresh child serves the next batch');
  } finally {
    await tiny.close();
  }
});

void test('the isolate resolves exactly the imports the static check allows', () => {
  assert.deepEqual([...RUNTIME_IMPORTS], [...ALLOWED_IMPORTS]);
});
