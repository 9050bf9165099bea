// `whale agent export <run>` writes the tuned agent as a self-contained bundle folder; `whale agent run
// <bundle> "<task>"` runs the one agent loop on one task from it and prints the transcript, with no
// server (cli/agent-bundle.ts, docs/agent-bundle.md).
import type { Command } from 'commander';
import * as path from 'node:path';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { DirectoryArtifactStore } from '../store/artifact-store';
import { PROJECT_ROOT } from './paths';
import { AgentBundleError, exportBundle, formatTranscript, loadBundle, runBundleTask } from './agent-bundle';
import { DomainModuleError } from '../domains/external';
import { UsageError } from './options';

function intOption(name: string, value: string | undefined, min: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`--${name} must be an integer >= ${min}; got '${value}'`);
  return Number(value);
}

async function userErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AgentBundleError || err instanceof DomainModuleError) {
      process.stderr.write(`whale: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

export function registerAgentCommand(program: Command): void {
  const agent = program.command('agent').description('export the tuned agent of a run as a bundle, and run a bundle on a task (no server needed)');

  agent
    .command('export')
    .description("write a run's final (or best) checkpoint, accepted harness, domain and scores to a bundle folder")
    .argument('<run>', 'the workflow id of the run')
    .option('--out <dir>', 'bundle folder, which must not exist (default: bundles/<run>-<which>)')
    .option('--which <final|best>', 'the final checkpoint and harness, or the pair with the best D_test mean@8', 'final')
    .action(async (runId: string, opts: { out?: string; which: string }) => {
      if (opts.which !== 'final' && opts.which !== 'best') throw new UsageError(`--which must be final or best; got '${opts.which}'`);
      const which = opts.which;
      const out = path.resolve(opts.out ?? path.join('bundles', `${runId}-${which}`));
      const config = loadTemporalConfig();
      const store = new DirectoryArtifactStore(path.resolve(PROJECT_ROOT, config.artifactDir));
      const m = await userErrors(async () => exportBundle(await connectClient(config), store, runId, out, which));
      const fmt = (x: number | null) => (x === null ? '-' : x.toFixed(4));
      process.stdout.write(
        `exported ${which} agent of ${runId} to ${out}\n` +
          `  domain ${m.domain.name} (${m.domain.kind}${m.domain.sha256 ? `, sha256 ${m.domain.sha256.slice(0, 12)}` : ''}); harness ${m.harness.name}; ${m.checkpoint ? `checkpoint ${m.checkpoint.sha256.slice(0, 12)}` : `weights: the served model's folder (${m.hf?.model})`}; hf/ (Hugging Face folder, ${m.hf?.source})\n` +
          `  D_test mean@8: this pair ${fmt(m.scores.exportedMeanAt8)} (${m.scores.exportedLabel ?? '-'}), initial ${fmt(m.scores.initialMeanAt8)}, best ${fmt(m.scores.bestMeanAt8)}, final ${fmt(m.scores.finalMeanAt8)}\n` +
          `  try: whale agent run ${path.relative(process.cwd(), out) || '.'} "<task id or question>"\n`,
      );
    });

  agent
    .command('run')
    .description('run the bundle\'s agent on one task (a task id of its domain, or free text where the domain allows) and print the transcript')
    .argument('<bundle>', 'bundle folder (from whale agent export)')
    .argument('<task>', 'a task id (e.g. from D_test) or, for math / search-qa / domains with taskFromText, a question')
    .option('--seed <n>', "the run seed of the sampling (default: the exporting run's seed, which reproduces its test evaluation)")
    .option('--samples <n>', 'episodes on the task, sample indexes 0..n-1', '1')
    .option('--threads <n>', 'sampler threads', '1')
    .option('--json', 'print JSON (task, rewards, trajectories)')
    .option('--trust-bundle-code', "run the bundle's own domain code (its domain/ folder) in this process, outside any sandbox; without it such a bundle is refused (a built-in domain's bundle needs no trust)")
    .action(async (dir: string, taskArg: string, opts: { seed?: string; samples: string; threads: string; json?: boolean; trustBundleCode?: boolean }) => {
      const bundle = await userErrors(async () => loadBundle(dir));
      const seed = intOption('seed', opts.seed, 0, bundle.manifest.run.seed);
      const samples = intOption('samples', opts.samples, 1, 1);
      const threads = intOption('threads', opts.threads, 1, 1);
      const trust = { trusted: opts.trustBundleCode === true, notice: (line: string) => process.stderr.write(`${line}\n`) };
      const r = await userErrors(() => runBundleTask(bundle, taskArg, { seed, samples, threads, trust }));
      if (opts.json) {
        process.stdout.write(JSON.stringify({ bundle: bundle.dir, runId: bundle.manifest.runId, seed, task: r.task, rewards: r.rewards, trajectories: r.trajectories }) + '\n');
        return;
      }
      process.stdout.write(`agent of ${bundle.manifest.runId} (${bundle.manifest.which}), domain ${bundle.manifest.domain.name}, seed ${seed}\n`);
      process.stdout.write(`task ${r.task.id}${r.task.split ? ` (D_${r.task.split})` : r.task.fromText ? ' (free text)' : ''}: ${r.task.question}\n`);
      r.trajectories.forEach((t, i) => process.stdout.write(formatTranscript(t, r.rewards[i]) + '\n'));
      if (!r.task.fromText) process.stdout.write(`rewards: ${r.rewards.join(' ')}\n`);
    });
}
