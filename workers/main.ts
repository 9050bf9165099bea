// Worker process entry: `whale worker --queue orchestration|model|proposer` (or `node --import tsx workers/main.ts <queue>`).
// One process per resource and task queue, each its own crash domain.
import { Runtime, DefaultLogger, makeTelemetryFilterString, type Worker } from '@temporalio/worker';
import { loadTemporalConfig, type TemporalConfig } from '../temporal.config';
import { connectWorker } from './connection';
import { createOrchestrationWorker } from './orchestration';

export const WORKER_KINDS = ['orchestration', 'model', 'proposer'] as const;
export type WorkerKind = (typeof WORKER_KINDS)[number];
/** The worker kinds whose activities this release implements (the demo starts these). */
export const IMPLEMENTED_WORKER_KINDS: readonly WorkerKind[] = ['orchestration', 'model', 'proposer'];

let runtimeInstalled = false;
function installRuntime(json: boolean): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const logger = json
    ? new DefaultLogger('INFO', (e) => process.stdout.write(JSON.stringify({ level: e.level, msg: e.message, ...e.meta, ts: Number(e.timestampNanos / 1_000_000n) }) + '\n'))
    : new DefaultLogger('INFO');
  Runtime.install({ logger, telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN' }) } } });
}

export async function createWorker(kind: WorkerKind, config: TemporalConfig): Promise<{ worker: Worker; close: () => Promise<void> }> {
  const connection = await connectWorker(config);
  switch (kind) {
    case 'orchestration':
      return { worker: await createOrchestrationWorker(connection, config), close: async () => undefined };
    case 'model': {
      // Loaded lazily: the orchestration worker never pays for onnxruntime or the sandbox.
      const { createModelWorker } = await import('./model');
      return createModelWorker(connection, config);
    }
    case 'proposer': {
      const { createProposerWorker } = await import('./proposer');
      return createProposerWorker(connection, config);
    }
  }
}

export async function runWorker(kind: WorkerKind, opts: { json?: boolean } = {}): Promise<void> {
  if (!WORKER_KINDS.includes(kind)) throw new Error(`unknown worker queue '${kind}': use one of ${WORKER_KINDS.join(', ')}`);
  installRuntime(opts.json ?? process.env.WHALE_LOG_FORMAT === 'json');
  const config = loadTemporalConfig();
  const { worker, close } = await createWorker(kind, config);
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
