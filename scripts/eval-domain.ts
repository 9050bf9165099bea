// Scores a domain's base policy under its seed harness on D_test, through the real agent loop (no server):
// the "is it solvable in part by the small model?" check for a domain folder (docs/bring-your-own-domain.md).
//   node --import tsx scripts/eval-domain.ts <folder | built-in name> [--tasks 64] [--samples 8] [--seed 0]
// Prints mean@k (mean reward over samples, averaged over tasks), pass@k and how often the model called a tool.
import * as path from 'node:path';
import { runEpisodes } from '../agent/loop';
import { SandboxPool } from '../harness-sandbox/pool';
import { decodeCheckpoint, OrtSampler } from '../model';
import { ROLLOUT_LIMITS } from '../training/corpus';
import { isDomainPath, resolveDomainArgument } from '../domains/external';
import { basePolicyOf, createDomainCache, seedHarnessOf } from '../workers/domain-cache';
import { TEST_EVAL_STEP, TEST_SAMPLING } from '../activities/model-activities';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

async function main(): Promise<void> {
  const target = process.argv[2];
  if (!target) throw new Error('usage: scripts/eval-domain.ts <domain folder | built-in name> [--tasks n] [--samples k] [--seed s]');
  const domain = isDomainPath(target) ? resolveDomainArgument(target, process.cwd()) : target;
  const tasks = arg('tasks', 64);
  const samples = arg('samples', 8);
  const seed = arg('seed', 0);
  const instance = createDomainCache()(domain);
  const pool = new SandboxPool({ processes: 1 });
  const sampler = await OrtSampler.fromCheckpoint(decodeCheckpoint(basePolicyOf(domain)), { threads: 2, maxBatchRows: 256 });
  try {
    const loaded = await pool.loadHarness(seedHarnessOf(domain));
    if (!loaded.ok) throw new Error(`seed harness does not load: ${loaded.failure.reason}`);
    const t0 = Date.now();
    const { trajectories } = await runEpisodes({
      backend: sampler, environment: instance.environment, harness: loaded.runner, tasks: instance.splits.test.slice(0, tasks), samplesPerTask: samples,
      sampling: { ...TEST_SAMPLING, topP: 1, ...ROLLOUT_LIMITS }, runSeed: seed, step: TEST_EVAL_STEP,
    });
    const byTask = new Map<string, number[]>();
    for (const t of trajectories) byTask.set(t.taskId, [...(byTask.get(t.taskId) ?? []), t.reward]);
    const means = [...byTask.values()].map((r) => r.reduce((a, b) => a + b, 0) / r.length);
    const meanAtK = means.reduce((a, b) => a + b, 0) / means.length;
    const passAtK = means.filter((m) => m > 0).length / means.length;
    const toolUse = trajectories.filter((t) => t.turns.some((x) => x.tool !== undefined)).length / trajectories.length;
    process.stdout.write(`${path.basename(target)}: base policy under h0 on ${byTask.size} D_test tasks x ${samples} samples (seed ${seed}): mean@${samples} ${(100 * meanAtK).toFixed(1)} %, pass@${samples} ${(100 * passAtK).toFixed(1)} %, tool use ${(100 * toolUse).toFixed(1)} % (${((Date.now() - t0) / 1000).toFixed(0)} s)\n`);
  } finally {
    await sampler.close();
    await pool.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
