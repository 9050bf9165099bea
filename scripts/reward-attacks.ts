// Runs every reward attack of bench/reward-attacks.ts against its domain's h0 on the committed base policy,
// paired per episode (same tasks, samples, run seed and step, so both see the same sampling seeds), and
// prints what each earns next to h0 and how its episodes ended.
//   node --import tsx scripts/reward-attacks.ts [--tasks 64] [--samples 4] [--seed 0] [--only name,name]
// Tasks come from D_harness (the split a harness search scores on). With --existing it scores instead every
// harness the project ships or writes (bench/existing-harnesses.ts) with a digest of the per-episode
// rewards, so two trees' outputs show whether honest harnesses keep their scores episode for episode.
import { runEpisodes } from '../agent/loop';
import type { Trajectory } from '../agent/trajectory';
import { createHash } from 'node:crypto';
import { existingHarnesses } from '../bench/existing-harnesses';
import { REWARD_ATTACKS, type AttackDomain } from '../bench/reward-attacks';
import { SandboxPool } from '../harness-sandbox/pool';
import { decodeCheckpoint, OrtSampler } from '../model';
import { ROLLOUT_LIMITS } from '../training/corpus';
import { basePolicyOf, createDomainCache, seedHarnessOf } from '../workers/domain-cache';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

function intArg(name: string, fallback: number): number {
  const v = Number(arg(name, String(fallback)));
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be an integer >= 1, got ${arg(name, '')}`);
  return v;
}

const mean = (ts: Trajectory[]): number => ts.reduce((a, t) => a + t.reward, 0) / ts.length;
const key = (t: Trajectory): string => `${t.taskId}#${t.sampleIndex}`;

function stopCounts(ts: Trajectory[]): string {
  const counts = new Map<string, number>();
  for (const t of ts) counts.set(t.stopReason, (counts.get(t.stopReason) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
}

async function main(): Promise<void> {
  const tasksN = intArg('tasks', 64);
  const samples = intArg('samples', 4);
  const seed = Number(arg('seed', '0'));
  const only = arg('only', '').split(',').filter((s) => s !== '');
  const unknown = only.filter((n) => !REWARD_ATTACKS.some((a) => a.name === n));
  if (unknown.length) throw new Error(`unknown attack(s) ${unknown.join(', ')}; attacks: ${REWARD_ATTACKS.map((a) => a.name).join(', ')}`);
  const attacks = REWARD_ATTACKS.filter((a) => only.length === 0 || only.includes(a.name));
  const existing = process.argv.includes('--existing');
  const domains = createDomainCache();
  const pool = new SandboxPool({ processes: 1 });
  const h0Runs = new Map<AttackDomain, Trajectory[]>();
  process.stdout.write(`reward attacks vs h0: ${tasksN} D_harness tasks x ${samples} samples, run seed ${seed}, committed base policies\n`);
  try {
    const domainNames: AttackDomain[] = existing ? ['math', 'search-qa', 'chess'] : [...new Set(attacks.map((a) => a.domain))];
    for (const domain of domainNames) {
      const instance = domains(domain);
      const tasks = instance.splits.harness.slice(0, tasksN);
      const sampler = await OrtSampler.fromCheckpoint(decodeCheckpoint(basePolicyOf(domain)), { threads: 2, maxBatchRows: 256 });
      try {
        const run = async (source: string): Promise<Trajectory[]> => {
          const loaded = await pool.loadHarness(source);
          if (!loaded.ok) throw new Error(`harness does not load: ${loaded.failure.reason}`);
          const r = await runEpisodes({
            backend: sampler, environment: instance.environment, harness: loaded.runner, tasks, samplesPerTask: samples,
            sampling: { temperature: 1, topK: 20, topP: 1, ...ROLLOUT_LIMITS }, runSeed: seed, step: 0,
          });
          return r.trajectories;
        };
        if (existing) {
          for (const h of existingHarnesses(domain, instance.environment, tasks)) {
            const ts = await run(h.source);
            const digest = createHash('sha256').update(ts.map((t) => `${key(t)}=${t.reward}`).join(',')).digest('hex').slice(0, 12);
            process.stdout.write(`${domain} ${h.name.padEnd(40)} mean reward ${mean(ts).toFixed(3)} rewards ${digest} violations ${ts.filter((t) => t.stopReason === 'contract-violation').length}/${ts.length}\n`);
            const v = ts.find((t) => t.stopReason === 'contract-violation');
            if (v) process.stdout.write(`    e.g. ${v.stopDetail.slice(0, 240)}\n`);
          }
          continue;
        }
        const h0 = await run(seedHarnessOf(domain));
        h0Runs.set(domain, h0);
        process.stdout.write(`${domain} h0: mean reward ${mean(h0).toFixed(3)} (${h0.length} episodes; ${stopCounts(h0)})\n`);
        for (const attack of attacks.filter((a) => a.domain === domain)) {
          const ts = await run(attack.source(tasks));
          const base = new Map(h0.map((t) => [key(t), t.reward]));
          const up = ts.filter((t) => t.reward > (base.get(key(t)) ?? 0)).length;
          const down = ts.filter((t) => t.reward < (base.get(key(t)) ?? 0)).length;
          const violations = ts.filter((t) => t.stopReason === 'contract-violation').length;
          process.stdout.write(
            `  ${attack.name.padEnd(20)} mean reward ${mean(ts).toFixed(3)} vs h0 ${mean(h0).toFixed(3)} (${(mean(ts) - mean(h0) >= 0 ? '+' : '')}${(mean(ts) - mean(h0)).toFixed(3)}); ` +
              `paired: ${up} episodes above h0, ${down} below; contract violations ${violations}/${ts.length}; ends: ${stopCounts(ts)}\n`,
          );
          const sample = ts.find((t) => t.stopReason === 'contract-violation');
          if (sample) process.stdout.write(`    e.g. ${sample.stopDetail.slice(0, 200)}\n`);
        }
      } finally {
        await sampler.close();
      }
    }
  } finally {
    await pool.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
