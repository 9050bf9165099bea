// A worker process for fault-injection runs: the product's worker (workers/main.ts) with one addition, an
// activity interceptor that appends a line to a progress journal (WHALE_FAULT_JOURNAL) when an activity
// attempt starts, at every heartbeat it sends (a fine-tune minibatch, a rollout turn), and when the attempt
// ends. The journal is how the soak counts work executed twice; nothing in the product reads it.
// Usage: node --import tsx testbed/journal-worker.ts orchestration|model|proposer
import { appendFileSync } from 'node:fs';
import { Worker, type ActivityInboundCallsInterceptor, type ActivityInterceptorsFactory, type WorkerOptions } from '@temporalio/worker';
import type { Context } from '@temporalio/activity';
import { runWorker, type WorkerKind } from '../workers/main';

/** One journal line (JSON). `t` is the wall clock in ms; `d` the heartbeat details, trimmed. */
export interface JournalLine {
  t: number;
  pid: number;
  ev: 'start' | 'hb' | 'end';
  type: string;
  wf: string;
  run: string;
  aid: string;
  attempt: number;
  ok?: boolean;
  error?: string;
  d?: Record<string, unknown>;
}

const journalPath = process.env.WHALE_FAULT_JOURNAL;

function write(ctx: Context, ev: JournalLine['ev'], extra: Partial<JournalLine> = {}): void {
  if (!journalPath) return;
  const i = ctx.info;
  const line: JournalLine = {
    t: Date.now(), pid: process.pid, ev, type: i.activityType, wf: i.workflowExecution?.workflowId ?? '', run: i.workflowExecution?.runId ?? '',
    aid: i.activityId, attempt: i.attempt, ...extra,
  };
  // One small O_APPEND write per line: a SIGKILL leaves at most one torn last line (the reader skips it).
  appendFileSync(journalPath, JSON.stringify(line) + '\n');
}

function trim(details: unknown): Record<string, unknown> | undefined {
  if (typeof details !== 'object' || details === null) return undefined;
  const d = details as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of ['kind', 'minibatch', 'progress', 'total', 'phase', 'turn', 'finished', 'validating']) if (k in d) out[k] = d[k];
  const partial = d.partial as { sha256?: string } | undefined;
  if (partial?.sha256) out.partial = partial.sha256.slice(0, 16);
  return out;
}

const journalInterceptor: ActivityInterceptorsFactory = (ctx) => {
  const inbound: ActivityInboundCallsInterceptor = {
    async execute(input, next) {
      const beat = ctx.heartbeat;
      let previous = '';
      (ctx as { heartbeat: (d?: unknown) => void }).heartbeat = (details?: unknown) => {
        // Timer beats repeat the last progress: only changes are journaled.
        const d = trim(details);
        const text = JSON.stringify(d ?? null);
        if (text !== previous) write(ctx, 'hb', { d });
        previous = text;
        beat(details);
      };
      write(ctx, 'start', { d: trim(ctx.info.heartbeatDetails) });
      try {
        const result: unknown = await next(input);
        write(ctx, 'end', { ok: true });
        return result;
      } catch (err) {
        write(ctx, 'end', { ok: false, error: (err as Error).message?.slice(0, 200) });
        throw err;
      }
    },
  };
  return { inbound };
};

// Every Worker.create in this process gets the journal interceptor next to the product's own.
const create = Worker.create.bind(Worker);
Worker.create = (options: WorkerOptions) => {
  const activity = [...(options.interceptors?.activity ?? []), journalInterceptor];
  return create({ ...options, interceptors: { ...options.interceptors, activity } });
};

runWorker((process.argv[2] ?? 'orchestration') as WorkerKind).then(() => process.exit(0), (err: Error) => {
  process.stderr.write(`[whale] worker failed: ${err.message}\n`);
  process.exit(1);
});
