// Measures what the harness sandbox adds to a rollout batch: the same harness (all five hooks), the same
// tasks, seeds and model, run once in-process (unsandboxed) and once through the sandbox pool (isolate in
// a child process, one IPC message per phase per turn), alternating order over several repetitions.
// Usage: node --import tsx scripts/bench-sandbox.ts [--domain math] [--preset embedded-1m] [--tasks 4]
//        [--samples 8] [--turns 4] [--max-new 64] [--reps 5] [--threads 2] [--audit-every 16]
// The backend is the real onnxruntime sampler (model/sampling/sampler.ts) with randomly initialised weights of
// the preset's size and context: generation cost is what a real rollout pays; its text is noise, so
// most turns are format errors that the harness's feedback hook answers (every hook runs every turn).
// The sandbox runs as in production: a fresh context per batch and the purity audit (1 hook call in 16
// re-run in a fresh context); --audit-every N changes the audit's rate (0 turns it off).

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { HarnessRunner } from '../agent/harness-runner';
import { runEpisodes } from '../agent/loop';
import { getDomain } from '../domains/registry';
import { loadHarnessInProcess } from '../harness-sandbox/in-process';
import { DEFAULT_SANDBOX_POOL_OPTIONS, SandboxPool } from '../harness-sandbox/pool';
import { modelConfig, type PresetName } from '../model/config';
import { initParams } from '../model/checkpoints/init-params';
import { OrtSampler } from '../model/sampling/sampler';

const BENCH_HARNESS = `import type { HarnessDefinition } from '../agent/harness-contract';
import { extractTag, fillTemplate, normalizeWhitespace, truncate } from 'whale:helpers';

type S = { turns: number; toolCalls: number; errors: number };
const harness: HarnessDefinition = {
  name: 'bench-all-hooks',
  systemPrompt: 'Solve the problem. Use tools with <name>input</name> and finish with <answer>...</answer>.',
  userTemplate: '{question}',
  maxTurns: MAX_TURNS,
  retryBudgets: { formatErrors: 10, illegalActions: 2 },
  toolParams: {},
  hooks: {
    setup() {
      return { state: { turns: 0, toolCalls: 0, errors: 0 } };
    },
    formatObservation(input) {
      return { state: input.state, text: fillTemplate('Problem: {q}\\nTools: {t}', { q: input.task.question, t: input.tools.map((t) => t.name).join(', ') }) };
    },
    parseAction(input) {
      const s = input.state as S;
      const next = { ...s, turns: s.turns + 1 };
      const answer = extractTag(input.text, 'answer');
      if (answer !== null) return { state: next, action: { kind: 'answer', answer: normalizeWhitespace(answer) } };
      for (const tool of input.tools) {
        const body = extractTag(input.text, tool.name);
        if (body !== null) return { state: { ...next, toolCalls: s.toolCalls + 1 }, action: { kind: 'tool', tool: tool.name, input: normalizeWhitespace(body) } };
      }
      return { state: next, action: { kind: 'none', reason: 'no action tag' } };
    },
    feedback(input) {
      const s = input.state as S;
      const e = input.event;
      const text = e.kind === 'tool' ? 'Result: ' + truncate(e.text, 200) : e.kind === 'format-error' ? 'Please use a tool tag or <answer>.' : truncate(e.text, 200);
      return { state: { ...s, errors: s.errors + (e.kind === 'format-error' ? 1 : 0) }, append: [{ role: 'tool', content: text }] };
    },
    shouldStop(input) {
      return { stop: (input.state as S).errors > 8, reason: 'too many format errors' };
    },
  },
};
export default harness;
`;

function timed(runner: HarnessRunner, acc: { ms: number; batches: number }): HarnessRunner {
  return {
    manifest: runner.manifest,
    runPhases: async (calls) => {
      const t0 = performance.now();
      const out = await runner.runPhases(calls);
      acc.ms += performance.now() - t0;
      acc.batches++;
      return out;
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** CPU time (ms) of this process plus the sandbox children, from getrusage and /proc (100 Hz ticks). */
function cpuMsNow(childPids: Array<number | undefined>): number {
  const own = process.cpuUsage();
  let children = 0;
  for (const pid of childPids) {
    if (pid === undefined) continue;
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      children += (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime (fields 14, 15)
    } catch {
      // the child is gone; it is restarted on demand
    }
  }
  return (own.user + own.system) / 1000 + children;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      domain: { type: 'string', default: 'math' },
      preset: { type: 'string', default: 'embedded-1m' },
      tasks: { type: 'string', default: '4' },
      samples: { type: 'string', default: '8' },
      turns: { type: 'string', default: '4' },
      'max-new': { type: 'string', default: '64' },
      reps: { type: 'string', default: '5' },
      threads: { type: 'string', default: '2' },
      'audit-every': { type: 'string', default: String(DEFAULT_SANDBOX_POOL_OPTIONS.limits.auditEvery) },
    },
  });
  const instance = getDomain(values.domain).load({ kind: 'synthetic' });
  const tasks = instance.splits.harness.slice(0, Number(values.tasks));
  const config = modelConfig(values.preset as PresetName);
  const backend = await OrtSampler.create(config, initParams(config, 1), { threads: Number(values.threads) });
  const source = BENCH_HARNESS.replace('MAX_TURNS', values.turns);
  const inProcess = loadHarnessInProcess(source);
  if (!inProcess.ok) throw new Error(`bench harness invalid: ${JSON.stringify(inProcess.violations)}`);
  const pool = new SandboxPool({ limits: { auditEvery: Number(values['audit-every']) } });
  const sandboxed = await pool.loadHarness(source);
  if (!sandboxed.ok) throw new Error(`bench harness invalid in the sandbox: ${JSON.stringify(sandboxed.violations)}`);

  const modes = { unsandboxed: inProcess.runner, sandboxed: sandboxed.runner };
  const wall: Record<string, number[]> = { unsandboxed: [], sandboxed: [] };
  const hooks: Record<string, number[]> = { unsandboxed: [], sandboxed: [] };
  const cpu: Record<string, number[]> = { unsandboxed: [], sandboxed: [] };
  const sampling = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: Number(values['max-new']), maxEpisodeTokens: 1024 };
  const batch = async (mode: keyof typeof modes, step: number) => {
    const acc = { ms: 0, batches: 0 };
    const c0 = cpuMsNow(pool.pids());
    const t0 = performance.now();
    const r = await runEpisodes({ backend, environment: instance.environment, harness: timed(modes[mode], acc), tasks, samplesPerTask: Number(values.samples), sampling, runSeed: 1, step });
    return { ms: performance.now() - t0, cpuMs: cpuMsNow(pool.pids()) - c0, hookMs: acc.ms, ipc: acc.batches, r };
  };

  console.log(`bench-sandbox: domain ${values.domain}, preset ${values.preset} (context ${config.contextLength}), batch ${tasks.length} x ${values.samples}, ${values.turns} turns max, ${values['max-new']} new tokens/turn, backend OrtSampler (onnxruntime-node, ${values.threads} threads, random init), purity audit ${Number(values['audit-every']) > 0 ? `1 hook call in ${values['audit-every']}` : 'off'}`);
  await batch('unsandboxed', 1000); // warm-up: ORT sessions, JIT, the sandbox child and its isolate
  await batch('sandboxed', 1000);
  let identical = true;
  for (let rep = 0; rep < Number(values.reps); rep++) {
    const order: Array<keyof typeof modes> = rep % 2 === 0 ? ['unsandboxed', 'sandboxed'] : ['sandboxed', 'unsandboxed'];
    const results: Record<string, Awaited<ReturnType<typeof batch>>> = {};
    for (const mode of order) {
      results[mode] = await batch(mode, rep);
      wall[mode].push(results[mode].ms);
      hooks[mode].push(results[mode].hookMs);
      cpu[mode].push(results[mode].cpuMs);
    }
    const a = results.unsandboxed.r;
    const b = results.sandboxed.r;
    const same = JSON.stringify(a.trajectories.map((t) => t.turns)) === JSON.stringify(b.trajectories.map((t) => t.turns));
    identical &&= same;
    console.log(
      `rep ${rep}: unsandboxed ${a.stats.turns} turns ${results.unsandboxed.ms.toFixed(0)} ms (hooks ${results.unsandboxed.hookMs.toFixed(1)} ms) | ` +
        `sandboxed ${results.sandboxed.ms.toFixed(0)} ms (hooks+IPC ${results.sandboxed.hookMs.toFixed(1)} ms in ${results.sandboxed.ipc} IPC messages) | ` +
        `${a.trajectories.reduce((n, t) => n + t.tokenCounts.generated, 0)} tokens generated | same turns: ${same}`,
    );
  }
  const mu = median(wall.unsandboxed);
  const ms = median(wall.sandboxed);
  const pct = (a: number, b: number) => `${(((a - b) / b) * 100).toFixed(2)}%`;
  console.log(`median wall per batch: unsandboxed ${mu.toFixed(0)} ms, sandboxed ${ms.toFixed(0)} ms, overhead ${pct(ms, mu)}`);
  const paired = wall.sandboxed.map((s, i) => s - wall.unsandboxed[i]);
  console.log(`median paired difference (sandboxed - unsandboxed, same rep): ${median(paired).toFixed(0)} ms = ${((median(paired) / mu) * 100).toFixed(2)}% of the unsandboxed median`);
  console.log(`median harness time per batch: unsandboxed ${median(hooks.unsandboxed).toFixed(1)} ms, sandboxed (hooks + IPC) ${median(hooks.sandboxed).toFixed(1)} ms = ${((median(hooks.sandboxed) / ms) * 100).toFixed(2)}% of the sandboxed batch`);
  // Both modes generate the same tokens (identical trajectories), so the harness time is what differs;
  // this estimate is far less noisy on a shared machine than the difference of two batch wall times.
  const extra = median(hooks.sandboxed.map((h, i) => h - hooks.unsandboxed[i]));
  console.log(`sandbox overhead from harness time: median (sandboxed - unsandboxed hooks) ${extra.toFixed(1)} ms per batch = ${((extra / mu) * 100).toFixed(2)}% of the unsandboxed batch`);
  const cu = median(cpu.unsandboxed);
  const cs = median(cpu.sandboxed);
  console.log(`median CPU time per batch (worker + sandbox child, all threads): unsandboxed ${cu.toFixed(0)} ms, sandboxed ${cs.toFixed(0)} ms, difference ${pct(cs, cu)}`);
  const t = pool.timing;
  console.log(`sandbox IPC messages: ${t.batches}, mean round trip ${(t.roundTripMs / t.batches).toFixed(2)} ms, of which in the child (isolate calls, checks) ${(t.childMs / t.batches).toFixed(2)} ms`);
  console.log(`identical trajectories (turns, actions, tool outputs) in both modes: ${identical}`);
  await pool.close();
  await backend.close();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
