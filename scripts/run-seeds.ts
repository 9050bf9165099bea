// Runs one preset over several seeds as real workflow runs (dev server + workers started if none answer),
// one after another, and prints per-seed initial / best / final test mean@8, the gain over the initial
// evaluation, wall time, and the mean gain with its standard error. A benchmark script, not a test.
//
//   node --import tsx scripts/run-seeds.ts --preset math-weights-only --seeds 0,1,2 [--out reports/x.json]
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import * as path from 'node:path';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { serverAnswers, startDevServer, stopChild } from '../cli/dev-server';
import { loadPreset } from '../cli/follow';
import { writeFileAtomic } from '../store/artifact-store';
import type { RunSummary } from '../workflows/run-state';
import { IMPLEMENTED_WORKER_KINDS } from '../workers/main';

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && process.argv[i + 1]) return process.argv[i + 1];
  if (fallback === undefined) throw new Error(`missing --${name}`);
  return fallback;
}

async function main(): Promise<void> {
  const preset = arg('preset');
  const seeds = arg('seeds', '0,1,2').split(',').map(Number);
  const out = arg('out', path.join('reports', `seeds-${preset}.json`));
  const config = loadTemporalConfig();
  const root = path.resolve(__dirname, '..');
  const started: ChildProcess[] = [];
  let server: ChildProcess | null = null;
  if (!serverAnswers(config)) server = await startDevServer({ config, headless: true, quiet: true });
  mkdirSync(path.join(root, '.data', 'logs'), { recursive: true });
  for (const kind of IMPLEMENTED_WORKER_KINDS) {
    const log = openSync(path.join(root, '.data', 'logs', `seeds-${kind}.log`), 'a');
    started.push(fork(path.join(root, 'workers', 'main.ts'), [kind], { execArgv: ['--import', 'tsx'], stdio: ['ignore', log, log, 'ipc'] }));
  }
  const client = await connectClient(config);
  const rows: { seed: number; initial: number | null; best: number | null; final: number | null; wallS: number; rollouts: number; workflowId: string }[] = [];
  try {
    for (const seed of seeds) {
      const input = { ...(loadPreset(preset) as Record<string, unknown>), seed };
      const workflowId = `seeds-${preset}-s${seed}-${Date.now()}`;
      const t0 = Date.now();
      const s = (await client.workflow.execute('whaleRun', { taskQueue: config.taskQueues.orchestration, workflowId, args: [input] })) as RunSummary;
      const row = { seed, initial: s.initialMeanAt8, best: s.bestMeanAt8, final: s.finalMeanAt8, wallS: (Date.now() - t0) / 1000, rollouts: s.ledger.training + s.ledger.search, workflowId };
      rows.push(row);
      process.stdout.write(`seed ${seed}: initial ${row.initial?.toFixed(4)} best ${row.best?.toFixed(4)} final ${row.final?.toFixed(4)} gain(final) ${((row.final ?? 0) - (row.initial ?? 0)).toFixed(4)} wall ${row.wallS.toFixed(0)} s (${workflowId})\n`);
    }
  } finally {
    await Promise.all(started.map((c) => stopChild(c, 40_000)));
    if (server) await stopChild(server, 15_000);
  }
  const stats = (xs: number[]) => {
    const m = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
    return { mean: m, sd, se: sd / Math.sqrt(xs.length) };
  };
  const finalGain = stats(rows.map((r) => (r.final ?? 0) - (r.initial ?? 0)));
  const bestGain = stats(rows.map((r) => (r.best ?? 0) - (r.initial ?? 0)));
  const summary = { preset, seeds, date: new Date().toISOString(), command: `node --import tsx scripts/run-seeds.ts --preset ${preset} --seeds ${seeds.join(',')}`, rows, finalGain, bestGain };
  await writeFileAtomic(path.resolve(root, out), JSON.stringify(summary, null, 2) + '\n');
  process.stdout.write(`gain of final over initial mean@8: ${(100 * finalGain.mean).toFixed(2)} points, SE ${(100 * finalGain.se).toFixed(2)} (${(finalGain.mean / (finalGain.se || Infinity)).toFixed(1)} SE)\n`);
  process.stdout.write(`gain of best over initial mean@8:  ${(100 * bestGain.mean).toFixed(2)} points, SE ${(100 * bestGain.se).toFixed(2)}\n`);
  process.stdout.write(`wrote ${out}\n`);
}

main().catch((err: Error) => {
  process.stderr.write(`run-seeds failed: ${err.message}\n`);
  process.exit(1);
});
