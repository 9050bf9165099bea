// `whale bench compare` (the method comparison as real workflow runs, resumable) and `whale bench runtime`
// (the trainer and sampler against the onnxruntime MatMul limit and PyTorch, and Temporal's overhead).
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { loadTemporalConfig } from '../temporal.config';
import { DEFAULT_BUDGET, DEFAULT_METHODS, DOMAINS, SIZES, parseMethod, runCompare, type CompareOptions } from '../bench/compare';
import { printJson } from './options';

/** The command line as a person would retype it (arguments with spaces or quotes are single-quoted). */
export function commandLine(argv: readonly string[]): string {
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);
  return ['whale', ...argv.slice(2)].map(quote).join(' ');
}

function list(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

/** `--seeds 3` means seeds 0, 1, 2; `--seeds 4,7` names them; `--seeds 5,` is seed 5 alone (a list of one). */
export function parseSeeds(value: string): number[] {
  const parts = list(value);
  const bad = () => new Error(`--seeds must be a count (3 = seeds 0,1,2) or a comma-separated list of seeds (0,1,2; one seed alone with a trailing comma: 5,); got '${value}'`);
  if (parts.length === 1 && !value.includes(',')) {
    const n = Number(parts[0]);
    if (n === 0) throw new Error(`--seeds 0 is a count of zero seeds: to run seed 0 alone write --seeds 0, (a list of one seed) or --seeds 1 (the first seed, 0)`);
    if (!Number.isInteger(n) || n < 1) throw bad();
    return Array.from({ length: n }, (_, i) => i);
  }
  const seeds = parts.map(Number);
  if (seeds.length === 0 || seeds.some((s) => !Number.isInteger(s) || s < 0)) throw bad();
  return [...new Set(seeds)];
}

interface CompareCli { domains: string; seeds: string; methods: string; budget: string; sizes: string; out: string; parallel: string; workers: string; proposer?: string; plan?: boolean; report?: boolean; json?: boolean }

/** `--proposer <file>`: a JSON object, the runs' `harness.proposer` (checked against the run config schema when planned). */
function readProposer(file: string | undefined): Record<string, unknown> | null {
  if (file === undefined) return null;
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`--proposer ${file}: cannot read a JSON object from it (${(err as Error).message}); write e.g. {"kind": "coding-agent", "command": ["claude", "-p", "{prompt}"]}`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error(`--proposer ${file}: expected a JSON object like {"kind": "coding-agent", "command": [...]}, got ${JSON.stringify(v)}`);
  return v as Record<string, unknown>;
}

export function compareOptions(o: CompareCli): CompareOptions & { proposer: Record<string, unknown> | null } {
  const domains = list(o.domains);
  if (domains.length === 0) throw new Error('--domains: give at least one domain, e.g. --domains math');
  const methods = list(o.methods);
  for (const m of methods) parseMethod(m);
  if (!(o.sizes in SIZES)) throw new Error(`--sizes must be ${Object.keys(SIZES).join(' or ')}, got '${o.sizes}'`);
  if (!['auto', 'start', 'none'].includes(o.workers)) throw new Error(`--workers must be auto, start or none, got '${o.workers}'`);
  const budget = Number(o.budget);
  const parallel = Number(o.parallel);
  if (!Number.isInteger(budget) || budget < 1) throw new Error(`--budget must be a positive whole number of rollouts, got '${o.budget}'`);
  if (!Number.isInteger(parallel) || parallel < 1) throw new Error(`--parallel must be a whole number >= 1, got '${o.parallel}'`);
  return {
    domains, methods, seeds: parseSeeds(o.seeds), budget, parallel, sizes: o.sizes as CompareOptions['sizes'],
    out: o.out, workers: o.workers as CompareOptions['workers'], plan: Boolean(o.plan), report: Boolean(o.report), proposer: readProposer(o.proposer),
  };
}

export function registerBenchCommand(program: Command): void {
  const bench = program.command('bench').description('benchmarks: the method comparison, and the runtime against its limits');

  bench
    .command('compare')
    .description('run every method on each domain at an equal rollout budget over several seeds, as real workflow runs; resumable (rerun the same command to continue)')
    .option('--domains <list>', 'comma-separated domains', DOMAINS.join(','))
    .option('--seeds <n|list>', 'number of seeds (0..n-1) or a comma-separated list (one seed alone: 5,)', '3')
    .option('--methods <list>', 'comma-separated: weights-only, harness-only, stagewise, stagewise-harness-first, prompt-only, whale-adaptive, whale-fixed:E:I; paper:<weights-only|whale-adaptive|whale-fixed:E:I> for the paper protocol', DEFAULT_METHODS.join(','))
    .option('--budget <rollouts>', 'training + search rollouts per run', String(DEFAULT_BUDGET))
    .option('--sizes <name>', `run sizes: ${Object.keys(SIZES).join(' | ')} (tiny only proves the machinery)`, 'default')
    .option('--out <dir>', 'results folder', path.join('reports', 'bench', 'compare'))
    .option('--parallel <k>', 'runs at a time (and model workers started)', '1')
    .option('--workers <mode>', 'auto: start workers for queues nobody polls | start | none', 'auto')
    .option('--proposer <file>', 'a JSON file with the harness.proposer of every run (e.g. a coding agent); absent: the built-in catalogue search. The runs get their own workflow ids')
    .option('--plan', 'only list the runs and which are finished')
    .option('--report', 'only rewrite results.json, results.md and the plots from the results folder (the comparison its runs and earlier invocations make at this --budget and --sizes); runs nothing, needs no server')
    .option('--json', 'print one JSON document on stdout (the plan, counts, failures, files written and results); progress stays on stderr')
    .action(async (o: CompareCli) => {
      const opts = compareOptions(o);
      const outcome = await runCompare(opts, loadTemporalConfig(), commandLine(process.argv));
      const c = outcome.counts;
      if (o.json) {
        const finished = new Set(outcome.results.map((r) => r.workflowId));
        printJson({
          out: outcome.out, plan: outcome.planned.map((p) => ({ workflowId: p.workflowId, domain: p.domain, method: p.method, seed: p.seed, finished: finished.has(p.workflowId) })),
          finished: outcome.results.length, counts: c, failures: outcome.failures, written: outcome.written.map((f) => path.join(outcome.out, f)),
          results: outcome.results.map(({ input: _input, curve: _curve, ...r }) => r),
        });
        if (outcome.failures.length) process.exitCode = 1;
        return;
      }
      if (opts.plan) return;
      if (opts.report) {
        process.stdout.write(`bench compare --report: ${outcome.results.length} of ${outcome.planned.length} planned runs finished; wrote ${outcome.written.map((f) => path.join(path.relative(process.cwd(), outcome.out) || '.', f)).join(', ')}\n`);
        return;
      }
      process.stdout.write(`bench compare: ${outcome.results.length} of ${outcome.planned.length} runs finished (this invocation: started ${c.started}, followed ${c.attached}, skipped ${c.skipped}, failed ${c.failed}); wrote ${outcome.written.map((f) => path.join(path.relative(process.cwd(), outcome.out) || '.', f)).join(', ')}\n`);
      if (outcome.failures.length) {
        process.stderr.write(`failed runs (rerun the command to start them again):\n${outcome.failures.map((f) => `  - ${f}`).join('\n')}\n`);
        process.exitCode = 1;
      }
    });

  bench
    .command('runtime')
    .description('trainer and sampler throughput against the onnxruntime MatMul limit and PyTorch (same model, shapes and threads), and Temporal\'s share of a run\'s wall time')
    .option('--threads <n>', 'threads for both runtimes', '2')
    .option('--steps <n>', 'timed training steps per runtime', '8')
    .option('--quick', 'fewer repetitions (proves the machinery; figures are noisier)')
    .option('--python <path>', 'python with torch installed', path.join('.tools', 'torch-venv', 'bin', 'python'))
    .option('--history <file>', 'an exported history (temporal workflow show --output json) of a finished sequential run, for the orchestration overhead')
    .option('--workflow-id <id>', 'or a finished run on the server, for the orchestration overhead')
    .option('--out <file>', 'also write the results as JSON here')
    .option('--json', 'print the results as one JSON document on stdout; the readable report goes to stderr')
    .option('--profile', 'also profile the trainer\'s graph per node (onnxruntime session profiling): time by op group and forward/backward, the matmul nodes\' GFLOP/s against the MatMul reference, and the factors that make up trainer/MatMul (about 10 s more)')
    .action(async (o: { threads: string; steps: string; quick?: boolean; python: string; history?: string; workflowId?: string; out?: string; json?: boolean; profile?: boolean }) => {
      // Loaded on use (it loads onnxruntime-node); require, as `bin/whale.js` registers tsx for CommonJS only.
      const { runRuntimeBench } = require('../bench/runtime') as typeof import('../bench/runtime');
      const threads = Number(o.threads);
      const steps = Number(o.steps);
      if (!Number.isInteger(threads) || threads < 1) throw new Error(`--threads must be a whole number >= 1, got '${o.threads}'`);
      if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps must be a whole number >= 1, got '${o.steps}'`);
      const options = { threads, steps, quick: Boolean(o.quick), python: o.python, history: o.history, workflowId: o.workflowId, out: o.out, command: commandLine(process.argv), profile: Boolean(o.profile) };
      if (o.json) printJson(await runRuntimeBench(options, (s) => process.stderr.write(s + '\n')));
      else await runRuntimeBench(options);
    });
}
