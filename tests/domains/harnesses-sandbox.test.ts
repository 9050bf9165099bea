// The seed and reference harnesses of every built-in domain pass the real sandbox's validator (isolate
// load, contract, tool parameters), and a sandboxed run gives the same trajectories as an in-process one.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runEpisodes } from '../../agent/loop';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { SandboxPool } from '../../harness-sandbox/pool';
import { validateHarnessSource } from '../../harness-sandbox/validate';
import { chessTeacher } from '../../domains/chess/teacher';
import { TeacherBackend, type TeacherPolicy } from '../../domains/common/teacher';
import { readSeedHarness } from '../../domains/harnesses';
import { readReferenceHarness } from '../../domains/reference-harnesses';
import { DOMAINS, getDomain, type BuiltinDomainName } from '../../domains/registry';

const pool = new SandboxPool({ limits: { isolateMemoryMb: 32, hookCpuMs: 500 } });
after(() => pool.close());

test('h0 and reference harnesses validate in the sandbox against their domain tools', async () => {
  for (const name of Object.keys(DOMAINS) as BuiltinDomainName[]) {
    const tools = getDomain(name).load({ kind: 'synthetic' }).environment.tools;
    for (const source of [readSeedHarness(name), readReferenceHarness(name)]) {
      const v = await validateHarnessSource(pool, source, tools);
      assert.ok(v.ok, `${name}: ${v.violations.map((x) => `${x.where}: ${x.message}`).join('; ')}`);
    }
  }
});

test('chess reference harness: sandboxed and in-process rollouts are identical', async () => {
  const inst = getDomain('chess').load({ kind: 'synthetic' });
  const tasks = inst.splits.harness.slice(0, 16);
  const source = readReferenceHarness('chess');
  const sandboxed = await pool.loadHarness(source);
  const inProcess = loadHarnessInProcess(source);
  assert.ok(sandboxed.ok && inProcess.ok);
  const sampling = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 32, maxEpisodeTokens: 256 };
  const run = (harness: typeof sandboxed.runner) =>
    runEpisodes({ backend: new TeacherBackend(tasks, chessTeacher() as TeacherPolicy<unknown>, { runSeed: 3, step: 1, samplesPerTask: 2, maxTurns: 8 }), environment: inst.environment, harness, tasks, samplesPerTask: 2, sampling, runSeed: 3, step: 1 });
  const a = await run(sandboxed.runner);
  const b = await run(inProcess.runner);
  assert.deepEqual(a.trajectories, b.trajectories);
  assert.ok(a.trajectories.some((t) => t.reward === 1) && a.trajectories.some((t) => t.reward === 0));
});
