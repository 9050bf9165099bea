// `whale worker --queue <kind>`: one worker process against the configured Temporal address (waits for the
// server with backoff, optional Prometheus metrics); the worker itself is workers/main.ts.
import type { Command } from 'commander';
import { DEFAULT_CONNECT_TIMEOUT_MS, WORKER_KINDS, connectTimeoutMs, runWorker, type WorkerKind } from '../workers/main';
import { metricsAddress } from '../workers/metrics';
import { UsageError } from './options';

export function registerWorkerCommand(program: Command): void {
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
}
