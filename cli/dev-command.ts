// `whale dev`: the Temporal dev server (cli/dev-server.ts) and the workers as child processes writing to this
// terminal, until Ctrl-C stops all (or the server dies: then the workers are stopped and the exit code is 1).
import type { Command } from 'commander';
import type { ChildProcess } from 'node:child_process';
import { loadTemporalConfig } from '../temporal.config';
import { IMPLEMENTED_WORKER_KINDS, type WorkerKind } from '../workers/kinds';
import { startDevServer } from './dev-server';
import { startWorkers, stopProcesses } from './local-processes';
import { UsageError } from './options';

export function registerDevCommand(program: Command): void {
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
      const children: ChildProcess[] = startWorkers(kinds.map((kind) => ({ kind, count: 1 })));
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
      await stopProcesses(children, server);
      process.stdout.write('[whale] stopped\n');
      if (serverDied) process.exitCode = 1;
    });
}
