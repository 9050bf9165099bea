// CPU time, not wall time, decides a timeout. We simulate an overloaded machine precisely: the sandbox
// child is stopped (SIGSTOP) while a healthy hook runs, so wall time passes without CPU time. A wall-clock
// limit would call that a timeout; the sandbox must re-run the pure hook and succeed.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { SandboxPool } from '../../harness-sandbox/pool';
import { harnessSource } from '../agent/harness-fixtures';

const HOOK_CPU_MS = 1_000;
const pool = new SandboxPool({ limits: { isolateMemoryMb: 32, hookCpuMs: HOOK_CPU_MS } });
after(() => pool.close());

const START = { phase: 'start' as const, input: { task: { id: 't', question: 'q', view: {} }, observation: {}, tools: [] } };

/** CPU ms of a process's main thread (Linux /proc, 10 ms ticks). */
function childMainThreadCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'latin1').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function burn(iterations: number): number {
  let x = 0;
  for (let i = 0; i < iterations; i++) x = (x * 31 + i) % 1_000_003;
  return x;
}

void test('a healthy hook stalled by the machine (wall time >> CPU time) is not a timeout', async () => {
  // Calibrate a workload of roughly 300 ms CPU here, so the hook is surely still running when stopped.
  let iterations = 1_000_000;
  for (let t = 0; t < 300; iterations *= 2) {
    const t0 = performance.now();
    burn(iterations);
    t = performance.now() - t0;
  }
  const loaded = await pool.loadHarness(
    harnessSource({}, `setup() { let x = 0; for (let i = 0; i < ${iterations}; i++) x = (x * 31 + i) % 1000003; return { state: x }; },`),
  );
  assert.ok(loaded.ok);
  await loaded.runner.runPhases([START]); // warm: the child exists and the isolate is loaded
  const pid = pool.pids()[0];
  assert.ok(pid);

  const cpu0 = childMainThreadCpuMs(pid);
  const t0 = performance.now();
  const pending = loaded.runner.runPhases([START]);
  // Poll (with a deadline) until the hook is burning CPU, then freeze the whole child for 2 limits: the
  // stall itself is the condition under test, not a wait for a state.
  while (childMainThreadCpuMs(pid) - cpu0 < 30) {
    assert.ok(performance.now() - t0 < 5_000, 'the hook never started running');
    await new Promise((r) => setImmediate(r));
  }
  process.kill(pid, 'SIGSTOP');
  // fixed-sleep-ok: the length of the freeze is the fault injected (two CPU limits of wall time), not a wait for a state
  await new Promise((r) => setTimeout(r, 2 * HOOK_CPU_MS));
  process.kill(pid, 'SIGCONT');
  const [result] = await pending;
  const wallMs = performance.now() - t0;
  assert.ok(result.ok, `a stalled healthy hook failed: ${JSON.stringify(result)}`);
  assert.ok(wallMs > 1.5 * HOOK_CPU_MS, `wall time ${wallMs.toFixed(0)} ms exceeded the first wall allowance, so the retry path ran`);
  assert.equal(pool.restarts, 0);
});

void test('an infinite loop still times out on CPU time', async () => {
  const loaded = await pool.loadHarness(harnessSource({}, 'setup() { for (;;) {} },'));
  assert.ok(loaded.ok);
  const t0 = performance.now();
  const [r] = await loaded.runner.runPhases([START]);
  assert.ok(!r.ok);
  assert.equal(r.failure.kind, 'timeout');
  assert.match(r.failure.reason, /ms of CPU/);
  // 1.5 limits of wall on an idle machine; a loaded one may need the 6-limit retry before CPU time adds up.
  assert.ok(performance.now() - t0 < 1_000 + 7.5 * HOOK_CPU_MS);
});

void test('a sandbox process that stops answering is killed at the worker-side deadline and replaced', async () => {
  const hung = new SandboxPool({ deadlineSlackMs: 300, limits: { isolateMemoryMb: 32, hookCpuMs: 50 } });
  try {
    const loaded = await hung.loadHarness(harnessSource());
    assert.ok(loaded.ok);
    const pid = hung.pids()[0];
    assert.ok(pid);
    process.kill(pid, 'SIGSTOP'); // a hung child: alive, never replies
    const t0 = performance.now();
    const [r] = await loaded.runner.runPhases([START]);
    const ms = performance.now() - t0;
    assert.ok(!r.ok);
    assert.equal(r.failure.kind, 'timeout');
    assert.match(r.failure.reason, /killed: no reply within \d+ ms/);
    assert.ok(ms < 10_000, `took ${ms.toFixed(0)} ms`);
    assert.equal(hung.restarts, 1);
    const [again] = await loaded.runner.runPhases([START]);
    assert.ok(again.ok, 'the next request gets a fresh child');
    assert.notEqual(hung.pids()[0], pid);
  } finally {
    await hung.close();
  }
});
