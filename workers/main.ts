// Worker process entry: `whale worker --queue orchestration|model|proposer` (or `node --import tsx workers/main.ts <queue>`).
// One process per resource and task queue, each its own crash domain.
import { Runtime, DefaultLogger, makeTelemetryFilterString, type Worker } from '@temporalio/worker';
import { loadTemporalConfig, type TemporalConfig } from '../temporal.config';
import { connectWorker, retryConnecting, type ConnectWait } from './connection';
import { createOrchestrationWorker, prepareWorkflowBundle } from './orchestration';
import { metricsAddress, type MetricsAddress } from './metrics';
import { missingAttributesWarning, searchAttributeStates } from './namespace';
import { WORKER_KINDS, type WorkerKind } from './kinds';

export { IMPLEMENTED_WORKER_KINDS, WORKER_KINDS, type WorkerKind } from './kinds';

let runtimeInstalled = false;
function installRuntime(json: boolean, kind: WorkerKind, metrics: MetricsAddress | null): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const logger = json
    ? new DefaultLogger('INFO', (e) => process.stdout.write(JSON.stringify({ level: e.level, msg: e.message, ...e.meta, ts: Number(e.timestampNanos / 1_000_000n) }) + '\n'))
    : new DefaultLogger('INFO');
  Runtime.install({
    logger,
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN' }) },
      // The SDK's worker metrics (task slots, poll and execution latencies) on http://<address>/metrics.
      ...(metrics ? { metrics: { prometheus: { bindAddress: metrics.bindAddress }, globalTags: { whale_worker: kind } } } : {}),
    },
  });
}

/** How long a worker waits for its server at start-up unless told otherwise (a supervisor may start both at once). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 60_000;

/** The start-up wait from --connect-timeout-ms, else WHALE_WORKER_CONNECT_TIMEOUT_MS, else the default. */
export function connectTimeoutMs(option: string | undefined, env = process.env.WHALE_WORKER_CONNECT_TIMEOUT_MS): number {
  const [value, source] = option !== undefined ? [option, '--connect-timeout-ms'] : env !== undefined && env !== '' ? [env, 'WHALE_WORKER_CONNECT_TIMEOUT_MS'] : [null, ''];
  if (value === null) return DEFAULT_CONNECT_TIMEOUT_MS;
  if (!/^\d+$/.test(value.trim())) throw new Error(`${source} must be a whole number of milliseconds >= 0 (0: fail at once if the server is not up); got '${value}'`);
  return Number(value.trim());
}

export async function createWorker(kind: WorkerKind, config: TemporalConfig, wait?: ConnectWait): Promise<{ worker: Worker; close: () => Promise<void> }> {
  // Before connecting and outside the connection retry: a bundle problem is not a server problem.
  const bundle = kind === 'orchestration' ? await prepareWorkflowBundle(process.env, wait?.log) : undefined;
  const connection = await connectWorker(config, wait);
  // The namespace may appear a moment after the server (a supervisor registering it): that is waited for too.
  const created = await retryConnecting(config, wait, async () => {
    switch (kind) {
      case 'orchestration':
        return { worker: await createOrchestrationWorker(connection, config, undefined, { bundle, log: wait?.log }), close: async () => undefined };
      case 'model': {
        // Loaded lazily: the orchestration worker never pays for onnxruntime or the sandbox. \`require\`, not
        // \`import()\`: the CLI registers tsx's CommonJS hook only, and Node's own import() cannot load './model'.
        const { createModelWorker } = require('./model') as typeof import('./model');
        return createModelWorker(connection, config);
      }
      case 'proposer': {
        const { createProposerWorker } = require('./proposer') as typeof import('./proposer');
        return createProposerWorker(connection, config);
      }
    }
  });
  if (wait) await checkSearchAttributes(connection, config.namespace, wait.log);
  return created;
}

/**
 * Says which of the project's search attributes the namespace lacks (runs would fail to upsert them), naming
 * `whale namespace setup`; never fails the start-up (a key without operator rights cannot even list them).
 */
export async function checkSearchAttributes(connection: Parameters<typeof searchAttributeStates>[0], namespace: string, log: (line: string) => void): Promise<void> {
  try {
    const warning = missingAttributesWarning(await searchAttributeStates(connection, namespace), namespace);
    if (warning) log(`[whale] warning: ${warning}`);
  } catch (err) {
    log(`[whale] note: could not list the search attributes of namespace '${namespace}' (${(err as Error).message.split('\n')[0]}); \`whale namespace setup\` checks and registers them`);
  }
}

export async function runWorker(kind: WorkerKind, opts: { json?: boolean; connectTimeoutMs?: number; metricsAddress?: string } = {}): Promise<void> {
  if (!WORKER_KINDS.includes(kind)) throw new Error(`unknown worker queue '${kind}': use one of ${WORKER_KINDS.join(', ')}`);
  const timeoutMs = opts.connectTimeoutMs ?? connectTimeoutMs(undefined);
  const metrics = metricsAddress(kind, opts.metricsAddress);
  installRuntime(opts.json ?? process.env.WHALE_LOG_FORMAT === 'json', kind, metrics);
  if (metrics) process.stderr.write(`[whale] ${kind} worker metrics (Prometheus) at http://${metrics.bindAddress}/metrics (from ${metrics.source})\n`);
  const config = loadTemporalConfig();
  const wait: ConnectWait = { timeoutMs, who: `${kind} worker`, log: (line) => process.stderr.write(`${line}\n`) };
  const { worker, close } = await createWorker(kind, config, wait);
  process.stderr.write(`[whale] ${kind} worker polling '${worker.options.taskQueue}' at ${config.address} (namespace ${config.namespace})\n`);
  try {
    await worker.run();
  } finally {
    await close();
  }
}

if (require.main === module) {
  runWorker((process.argv[2] ?? 'orchestration') as WorkerKind).then(() => {
    // The native connection would keep the event loop alive after a graceful shutdown.
    process.exit(0);
  }, (err: Error) => {
    process.stderr.write(`[whale] worker failed: ${err.message}\n`);
    process.exit(1);
  });
}
