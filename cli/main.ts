// The `whale` command line: dev server, workers, starting and inspecting runs.
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { fork } from 'node:child_process';
import * as path from 'node:path';
import { loadTemporalConfig } from '../temporal.config';
import { expandRunConfig } from '../workflows/run-config';
import { connectClient } from '../workers/connection';
import { DEFAULT_CONNECT_TIMEOUT_MS, IMPLEMENTED_WORKER_KINDS, WORKER_KINDS, connectTimeoutMs, runWorker, type WorkerKind } from '../workers/main';
import { startDevServer, stopChild } from './dev-server';
import { describeRun, formatRunTable, formatStatus, listRunRows, runDiskUse } from './status';
import { PROJECT_ROOT } from './paths';
import { runDemo } from './demo';
import { followRun, formatSummary, listPresets, loadPreset } from './follow';
import { buildTimeline, fetchHistories, readHistoryFiles } from '../audit/timeline';
import { explainPhases } from '../audit/explain';
import { writeReport } from '../audit/report';
import { pointerModels } from '../audit/pointers';
import { registerPretrainCommand } from './pretrain-command';
import { applyCliRunSources, RunSourceError, type RunSourceCliOptions } from './run-sources';
import { domainLabel } from '../domains/external';
import { registerAgentCommand } from './agent-command';
import { registerDomainCommand } from './domain-command';
import { registerServeCommand } from './serve-command';
import { registerGcCommand } from './gc-command';
import { registerStopCommand } from './stop-command';
import { registerBenchCommand } from './bench-command';
import { registerHfCommands } from './hf-command';
import { metricsAddress } from '../workers/metrics';
import { registerTrackCommand } from './track-command';

/** A user error: printed without a stack, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

function readRunConfig(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read run config ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`run config ${file} is not valid JSON: ${(err as Error).message}`);
  }
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

export function buildProgram(): Command {
  const program = new Command('whale')
    .description('WHALE (Weight-Harness Alternating LEarning) on Temporal')
    .version(packageVersion(), '-V, --version', "print whale's version (package.json) and exit")
    // Commander's own parse errors (unknown option or command, missing argument) throw instead of exiting
    // with 1, so main() can exit 2 as for every usage error; set before the commands, which inherit it.
    .exitOverride()
    .showHelpAfterError();

  program
    .command('dev')
    .description('start the Temporal dev server (state in .data/temporal) and the workers; Ctrl-C stops all')
    .option('--headless', 'no Web UI')
    .option('--workers <kinds>', `comma-separated workers to start (default: ${IMPLEMENTED_WORKER_KINDS.join(',')})`)
    .option('--no-workers', 'start the server only')
    .action(async (opts: { headless?: boolean; workers: boolean | string }) => {
      const config = loadTemporalConfig();
      // Checked before the server starts: a typo must not leave a server running.
      const kinds: WorkerKind[] = opts.workers === false ? [] : typeof opts.workers === 'string' ? opts.workers.split(',').map((k) => k.trim()) as WorkerKind[] : [...IMPLEMENTED_WORKER_KINDS];
      const unknown = kinds.filter((k) => !IMPLEMENTED_WORKER_KINDS.includes(k));
      if (unknown.length) throw new UsageError(`--workers: unknown worker(s) ${unknown.join(', ')}; use any of ${IMPLEMENTED_WORKER_KINDS.join(', ')}`);
      const server = await startDevServer({ config, headless: opts.headless });
      const children: ChildProcess[] = [];
      for (const kind of kinds) {
        children.push(fork(path.join(PROJECT_ROOT, 'workers', 'main.ts'), [kind], { execArgv: ['--import', 'tsx'], stdio: 'inherit', cwd: PROJECT_ROOT }));
      }
      process.stdout.write(
        `[whale] Temporal dev server at ${config.address} (namespace ${config.namespace}, retention ${config.devServer.retention}, data ${config.devServer.dataDir})\n` +
          (opts.headless ? '' : `[whale] Web UI: http://${config.devServer.ip}:${config.devServer.uiPort}\n`) +
          `[whale] workers: ${kinds.length ? kinds.join(', ') : 'none'}; press Ctrl-C to stop\n`,
      );
      let serverDied = false;
      let stopping = false;
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        server.once('exit', (code) => {
          if (stopping) return;
          serverDied = true;
          process.stderr.write(`[whale] the dev server exited unexpectedly (code ${code}); stopping the workers\n`);
          resolve();
        });
      });
      stopping = true;
      process.stdout.write('[whale] stopping workers and server...\n');
      await Promise.all(children.map((c) => stopChild(c, 40_000)));
      await stopChild(server, 15_000);
      process.stdout.write('[whale] stopped\n');
      if (serverDied) process.exitCode = 1;
    });

  program
    .command('demo')
    .description('run the main job on the embedded default (starts a dev server and workers if none run)')
    .action(async () => runDemo());

  program
    .command('worker')
    .description('run one worker against the configured Temporal address')
    .requiredOption('--queue <kind>', `which worker: ${WORKER_KINDS.join(' | ')}`)
    .option('--json-logs', 'log JSON lines')
    .option('--connect-timeout-ms <ms>', `how long to wait for the Temporal server (and namespace) at start-up, retrying with backoff; 0 fails at once (default: WHALE_WORKER_CONNECT_TIMEOUT_MS, else ${DEFAULT_CONNECT_TIMEOUT_MS})`)
    .option('--metrics-address <host:port>', "serve the SDK's Prometheus metrics at http://<host:port>/metrics (default: WHALE_METRICS_ADDRESS_<QUEUE>, else WHALE_METRICS_ADDRESS, else off)")
    .action(async (opts: { queue: string; jsonLogs?: boolean; connectTimeoutMs?: string; metricsAddress?: string }) => {
      if (!WORKER_KINDS.includes(opts.queue as WorkerKind)) throw new UsageError(`--queue must be one of ${WORKER_KINDS.join(', ')}; got '${opts.queue}'`);
      let timeoutMs: number;
      try {
        timeoutMs = connectTimeoutMs(opts.connectTimeoutMs);
        metricsAddress(opts.queue as WorkerKind, opts.metricsAddress);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      await runWorker(opts.queue as WorkerKind, { json: opts.jsonLogs, connectTimeoutMs: timeoutMs, metricsAddress: opts.metricsAddress });
      process.exit(0);
    });

  const startRun = async (file: string | undefined, opts: { id?: string; preset?: string; seed?: string } & RunSourceCliOptions) => {
    if (!file && !opts.preset) throw new UsageError(`give a run config file or --preset <name> (presets: ${listPresets().join(', ')})`);
    if (file && opts.preset) throw new UsageError('give either a run config file or --preset, not both');
    let raw: unknown;
    try {
      raw = file ? readRunConfig(file) : loadPreset(opts.preset!);
    } catch (err) {
      throw err instanceof UsageError ? err : new UsageError((err as Error).message);
    }
    const source = file ?? `preset ${opts.preset}`;
    if (opts.seed !== undefined) {
      if (!/^\d+$/.test(opts.seed)) throw new UsageError(`--seed must be a non-negative integer; got '${opts.seed}'`);
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new UsageError(`run config (${source}) must be a JSON object`);
      raw = { ...(raw as Record<string, unknown>), seed: Number(opts.seed) };
    }
    raw = await applyCliRunSources(raw, file, opts).catch((e: unknown) => Promise.reject(e instanceof RunSourceError ? new UsageError(e.message) : e));
    const expanded = expandRunConfig(raw);
    if (!expanded.ok) throw new UsageError(`invalid run config (${source}):\n${expanded.problems.map((p) => `  - ${p}`).join('\n')}`);
    const config = loadTemporalConfig();
    const client = await connectClient(config);
    const c = expanded.config;
    const workflowId = opts.id ?? `whale-${c.method}-${domainLabel(c.domain)}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    await client.workflow.start('whaleRun', { taskQueue: config.taskQueues.orchestration, workflowId, args: [raw] });
    return { client, workflowId };
  };

  program
    .command('start')
    .description('start a run from a JSON run config or a preset; prints its workflow id')
    .argument('[config]', 'run config JSON file')
    .option('--preset <name>', 'a preset from presets/ instead of a file')
    .option('--id <workflowId>', 'workflow id (default: whale-<method>-<domain>-<time>)')
    .option('--seed <n>', "the run seed (overrides the config's seed)")
    .option('--domain <name|folder>', "the domain: a built-in name or your domain folder (overrides the config's; docs/bring-your-own-domain.md)")
    .option('--from <run|bundle>', "start from another run's checkpoint and harness, or an exported agent bundle folder (docs/agent-bundle.md)")
    .option('--from-which <final|best>', "with --from <run>: the parent's final (default) or best evaluated checkpoint and harness")
    .option('--trust-bundle-code', "with --from <bundle> that brings its own domain folder: run that code (here and on the workers); refused without it")
    .action(async (file: string | undefined, opts: { id?: string; preset?: string; seed?: string } & RunSourceCliOptions) => {
      const { workflowId } = await startRun(file, opts);
      process.stdout.write(`${workflowId}\n`);
    });

  program
    .command('run')
    .description('start a run (file or --preset) and follow it with a live progress line until it ends')
    .argument('[config]', 'run config JSON file')
    .option('--preset <name>', 'a preset from presets/ instead of a file')
    .option('--id <workflowId>', 'workflow id (default: whale-<method>-<domain>-<time>)')
    .option('--seed <n>', "the run seed (overrides the config's seed)")
    .option('--domain <name|folder>', "the domain: a built-in name or your domain folder (overrides the config's; docs/bring-your-own-domain.md)")
    .option('--from <run|bundle>', "start from another run's checkpoint and harness, or an exported agent bundle folder (docs/agent-bundle.md)")
    .option('--from-which <final|best>', "with --from <run>: the parent's final (default) or best evaluated checkpoint and harness")
    .option('--trust-bundle-code', "with --from <bundle> that brings its own domain folder: run that code (here and on the workers); refused without it")
    .action(async (file: string | undefined, opts: { id?: string; preset?: string; seed?: string } & RunSourceCliOptions) => {
      const { client, workflowId } = await startRun(file, opts);
      process.stderr.write(`[whale] run ${workflowId} started; Ctrl-C stops following (the run goes on; \`whale status ${workflowId}\`)\n`);
      const summary = await followRun(client, workflowId, process.stderr);
      process.stdout.write(formatSummary(summary) + '\n');
    });

  program
    .command('status')
    .description('show where a run stands and what it waits on (works while no worker runs)')
    .argument('<workflowId>')
    .option('--json', 'print JSON')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      const config = loadTemporalConfig();
      const client = await connectClient(config);
      const view = await describeRun(client, workflowId);
      view.disk = await runDiskUse(client, workflowId, path.resolve(PROJECT_ROOT, config.artifactDir));
      process.stdout.write((opts.json ? JSON.stringify(view, null, 2) : formatStatus(view)) + '\n');
    });

  registerPretrainCommand(program);
  registerAgentCommand(program);
  registerDomainCommand(program);
  registerServeCommand(program);
  registerGcCommand(program);
  registerStopCommand(program);
  registerBenchCommand(program);
  registerHfCommands(program);
  registerTrackCommand(program);

  program
    .command('audit')
    .description('write an audit report (summary.md, SVG plots, index.html) from a run\'s workflow history')
    .argument('[workflowId]', 'the run to audit (reads every run of its continue-as-new chain from the server)')
    .option('--history <files...>', 'exported history JSON files (temporal workflow show --output json), oldest run first; no server needed')
    .option('--out <dir>', 'report folder (default: reports/audit-<workflowId>)')
    .action(async (workflowId: string | undefined, opts: { history?: string[]; out?: string }) => {
      if (!workflowId && !opts.history) throw new UsageError('give a workflow id, or --history <file...> to audit an exported history');
      const id = workflowId ?? path.basename(opts.history![0], '.json');
      const histories = opts.history ? readHistoryFiles(opts.history) : await fetchHistories(await connectClient(loadTemporalConfig()), id);
      const timeline = buildTimeline(id, histories);
      const phases = explainPhases(timeline);
      const out = path.resolve(opts.out ?? path.join('reports', `audit-${id}`));
      // A run on a served model: name the folders its checkpoint pointers point to (from the local store).
      const models = await pointerModels(timeline, path.resolve(PROJECT_ROOT, loadTemporalConfig().artifactDir));
      const files = await writeReport(timeline, phases, out, models);
      const mismatches = phases.filter((p) => p.matches === false).length;
      process.stdout.write(`audit of ${id}: ${phases.length} phases explained, ${mismatches} mismatch(es); wrote ${files.map((f) => path.join(out, f)).join(', ')}\n`);
      if (mismatches > 0) process.exitCode = 1;
    });

  program
    .command('list')
    .description('list runs with phase, step and best score (from search attributes)')
    .option('-q, --query <query>', "extra visibility query, e.g. \"WhalePhase = 'harness-1'\" or 'WhaleBestScore > 0.3'")
    .option('--limit <n>', 'at most this many', '50')
    .option('--json', 'print JSON rows')
    .action(async (opts: { query?: string; limit: string; json?: boolean }) => {
      const client = await connectClient(loadTemporalConfig());
      const rows = await listRunRows(client, opts.query, Number(opts.limit));
      process.stdout.write((opts.json ? JSON.stringify(rows, null, 2) : formatRunTable(rows).join('\n')) + '\n');
    });

  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
    process.exit(process.exitCode ?? 0);
  } catch (err) {
    // Commander has printed its message (and the help) already: --help and --version exit 0, a parse error 2.
    if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
    const e = err as Error;
    process.stderr.write(`whale: ${e.message}\n`);
    process.exit(e instanceof UsageError ? 2 : 1);
  }
}
