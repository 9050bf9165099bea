// Rollout throughput with 1 model worker x 1 thread vs 2 model workers x 1 thread.
// For each configuration: a fresh dev server, one orchestration worker, the model workers as separate
// processes, and the same load: R concurrent weights-only runs of S steps whose fine-tune steps accept
// nothing (acceptThreshold 1), so model-worker time is rollouts. Throughput = rollouts (and generated
// tokens) of every rolloutBatch / wall time from the first start to the last run's end.
//
//   node --import tsx scripts/bench-rollout-workers.ts [--runs 4] [--steps 3] [--prompts 32] [--samples 8] [--out file.json]
import { writeFileSync } from 'node:fs';
import type { RolloutBatchResult } from '../activities/types';
import { temporal } from '@temporalio/proto';
import { startScaleCluster } from '../testbed/scale-cluster';
import { waitFor } from '../testbed/env';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
  return n;
}

const RUNS = arg('runs', 4);
const STEPS = arg('steps', 3);
const PROMPTS = arg('prompts', 32);
const SAMPLES = arg('samples', 8);
const outIndex = process.argv.indexOf('--out');
const OUT = outIndex >= 0 ? process.argv[outIndex + 1] : undefined;

interface Measured {
  modelWorkers: number;
  wallSeconds: number;
  rollouts: number;
  tokens: number;
  rolloutsPerSecond: number;
  tokensPerSecond: number;
  batchesPerWorker: Record<string, number>;
}

async function measure(modelWorkers: number): Promise<Measured> {
  // A fresh dev server on a free port with its own data folder, and the workers as separate processes.
  const cluster = await startScaleCluster();
  const { client, config } = cluster;
  try {
    cluster.startWorker('orchestration', 'orchestration');
    for (let i = 0; i < modelWorkers; i++) cluster.startWorker('model', `model-${i}`, { WHALE_MODEL_THREADS: '1' });
    // Every model worker polls before any work is sent (a late starter would otherwise get none).
    await waitFor(`${modelWorkers} model workers to poll (logs in ${cluster.dir})`, async () => {
      const res = await client.workflowService.describeTaskQueue({ namespace: config.namespace, taskQueue: { name: config.taskQueues.model }, taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY });
      return new Set((res.pollers ?? []).map((p) => p.identity)).size >= modelWorkers || undefined;
    }, 900_000);
    // Warm-up runs (two per worker) load the sampler and domain before the clock starts.
    const cfg = (seed: number, steps: number) => ({
      version: 1, method: 'weights-only', domain: 'math', seed,
      weight: { promptsPerStep: PROMPTS, samplesPerPrompt: SAMPLES, acceptThreshold: 1 },
      budget: { totalWeightSteps: steps },
      test: { everyEpochs: 1000, samplesPerTask: 1, taskLimit: 1 },
    });
    const q = config.taskQueues.orchestration;
    await Promise.all(Array.from({ length: modelWorkers * 2 }, (_, i) => client.workflow.execute('whaleRun', { taskQueue: q, workflowId: `warmup-${i}`, args: [cfg(900 + i, 1)] })));
    const t0 = Date.now();
    const ids = Array.from({ length: RUNS }, (_, i) => `bench-${i}`);
    await Promise.all(ids.map((id, i) => client.workflow.execute('whaleRun', { taskQueue: q, workflowId: id, args: [cfg(i, STEPS)] })));
    const wallSeconds = (Date.now() - t0) / 1000;
    let rollouts = 0;
    let tokens = 0;
    const batchesPerWorker: Record<string, number> = {};
    for (const id of ids) {
      const history = await client.workflow.getHandle(id).fetchHistory();
      const scheduled = new Map<string, string>();
      const identity = new Map<string, string>();
      for (const e of history.events ?? []) {
        if (e.activityTaskScheduledEventAttributes) scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
        if (e.activityTaskStartedEventAttributes) identity.set(String(e.activityTaskStartedEventAttributes.scheduledEventId), e.activityTaskStartedEventAttributes.identity ?? '');
        const c = e.activityTaskCompletedEventAttributes;
        if (c && scheduled.get(String(c.scheduledEventId)) === 'rolloutBatch') {
          const r = JSON.parse(Buffer.from(c.result?.payloads?.[0]?.data ?? new Uint8Array()).toString('utf8')) as RolloutBatchResult;
          rollouts += r.rollouts;
          tokens += r.tokens;
          const who = identity.get(String(c.scheduledEventId)) ?? '?';
          batchesPerWorker[who] = (batchesPerWorker[who] ?? 0) + 1;
        }
      }
    }
    return { modelWorkers, wallSeconds, rollouts, tokens, rolloutsPerSecond: rollouts / wallSeconds, tokensPerSecond: tokens / wallSeconds, batchesPerWorker };
  } finally {
    await cluster.teardown();
  }
}

async function main(): Promise<void> {
  process.stderr.write(`[bench] load: ${RUNS} concurrent weights-only runs x ${STEPS} steps x ${PROMPTS} prompts x ${SAMPLES} samples (math, embedded sampler, 1 thread per model worker)\n`);
  const one = await measure(1);
  process.stderr.write(`[bench] 1 model worker : ${one.rolloutsPerSecond.toFixed(2)} rollouts/s, ${one.tokensPerSecond.toFixed(0)} tok/s (${one.wallSeconds.toFixed(1)} s)\n`);
  const two = await measure(2);
  process.stderr.write(`[bench] 2 model workers: ${two.rolloutsPerSecond.toFixed(2)} rollouts/s, ${two.tokensPerSecond.toFixed(0)} tok/s (${two.wallSeconds.toFixed(1)} s); batches per worker ${JSON.stringify(two.batchesPerWorker)}\n`);
  const report = {
    command: `node --import tsx scripts/bench-rollout-workers.ts ${process.argv.slice(2).join(' ')}`.trim(),
    load: { runs: RUNS, steps: STEPS, prompts: PROMPTS, samples: SAMPLES },
    oneWorker: one, twoWorkers: two,
    ratio: two.rolloutsPerSecond / one.rolloutsPerSecond,
    target: 1.6,
    loadAverage: (await import('node:os')).loadavg(),
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  process.stderr.write(`[bench] ratio 2/1 = ${report.ratio.toFixed(2)} (target >= 1.6)\n`);
  if (OUT) writeFileSync(OUT, JSON.stringify(report, null, 2) + '\n');
}

main().then(() => process.exit(0), (err: Error) => {
  process.stderr.write(`[bench] failed: ${err.message}\n`);
  process.exit(1);
});
