// Entry point of a sandbox child process (forked by harness-sandbox/sandbox-process.ts with tsx). Holds
// the isolates of recently used harnesses (one isolate per harness, never shared between harnesses) and
// answers one request at a time. Each batch (one `run` request: one phase of one turn of a rollout batch)
// runs in a fresh context of its harness's isolate; while idle the process makes the next fresh contexts
// ahead of need. If anything here dies (a V8 out-of-memory aborts the process), only this process dies;
// the worker restarts it and reports a typed failure.

import type { HarnessManifest, HookName } from '../agent/harness-contract';
import type { HarnessFailure, PhaseCall, PhaseResult } from '../agent/harness-runner';
import { runPhase } from '../agent/harness-phases';
import type { IsolateLimits } from './isolate-harness';
import { IsolateHarness } from './isolate-harness';
import type { ChildMessage, ParentMessage } from './protocol';

/** Isolates kept alive per process (least recently used goes first); the pool passes it as argv[2]. */
const MAX_ISOLATES = Math.max(1, Number(process.argv[2] ?? 4) || 4);
/** After this many timeouts / memory failures in one batch, the rest of the batch is not run. */
const STRIKES_PER_BATCH = 2;

const isolates = new Map<string, IsolateHarness>();
/** Isolates created by this process (reported with each batch, so tests and benchmarks see reloads). */
let isolateLoads = 0;

function send(msg: ChildMessage): void {
  process.send?.(msg);
}

/** The harness's isolate, loaded if needed; `loaded` says its context is brand new (no renew needed). */
function getIsolate(harnessId: string, code: string, limits: IsolateLimits): { ok: true; harness: IsolateHarness; loaded: boolean } | { ok: false; failure: HarnessFailure } {
  const cached = isolates.get(harnessId);
  if (cached && !cached.disposed) {
    isolates.delete(harnessId); // re-insert: Map order is the LRU order
    isolates.set(harnessId, cached);
    return { ok: true, harness: cached, loaded: false };
  }
  const loaded = IsolateHarness.load(code, limits);
  if (!loaded.ok) return loaded;
  install(harnessId, loaded.harness);
  return { ok: true, harness: loaded.harness, loaded: true };
}

/** Caches an isolate as the most recently used one, disposing the least recently used beyond the cap. */
function install(harnessId: string, harness: IsolateHarness): void {
  isolates.get(harnessId)?.dispose();
  isolates.delete(harnessId);
  isolates.set(harnessId, harness);
  isolateLoads++;
  while (isolates.size > MAX_ISOLATES) {
    const [oldest, h] = isolates.entries().next().value as [string, IsolateHarness];
    h.dispose();
    isolates.delete(oldest);
  }
}

async function runBatch(manifest: HarnessManifest, code: string, limits: IsolateLimits, calls: PhaseCall[]): Promise<PhaseResult[]> {
  const results: PhaseResult[] = [];
  let strikes = 0;
  let lastStrike: HarnessFailure | null = null;
  let batchHarness: IsolateHarness | null = null;
  for (const call of calls) {
    if (strikes >= STRIKES_PER_BATCH && lastStrike) {
      results.push({ ok: false, failure: { ...lastStrike, reason: `not run: ${strikes} earlier calls in this batch failed (${lastStrike.reason})` } });
      continue;
    }
    const caller = async (hook: HookName, input: unknown) => {
      const iso = getIsolate(manifest.harnessId, code, limits);
      if (!iso.ok) return iso;
      if (iso.harness !== batchHarness) {
        // First use in this batch (or a reload after a failure): start from a fresh context, so nothing
        // an earlier batch, episode set or run left in the module's variables can reach this one.
        batchHarness = iso.harness;
        if (!iso.loaded) {
          const renewed = iso.harness.renew();
          if (!renewed.ok) return renewed;
        }
      }
      return iso.harness.call(hook, input);
    };
    const r = await runPhase(manifest, caller, call);
    if (!r.ok && (r.failure.kind === 'timeout' || r.failure.kind === 'memory-limit')) {
      strikes++;
      lastStrike = r.failure;
    }
    results.push(r);
  }
  return results;
}

process.on('message', (raw: ParentMessage) => {
  if (raw.type === 'load') {
    const r = IsolateHarness.load(raw.code, raw.limits);
    if (r.ok) install(raw.harnessId, r.harness);
    send({ type: 'load-result', id: raw.id, result: r.ok ? { ok: true, manifestData: r.harness.manifestData } : { ok: false, failure: r.failure } });
    if (r.ok) prepareSpares(r.harness);
    return;
  }
  const t0 = performance.now();
  runBatch(raw.manifest, raw.code, raw.limits, raw.calls).then(
    (results) => {
      send({ type: 'run-result', id: raw.id, results, childMs: performance.now() - t0, isolateLoads });
      prepareSpares(isolates.get(raw.manifest.harnessId));
    },
    (e: unknown) => {
      // A bug in trusted code: fail the batch loudly rather than hang the worker.
      const reason = `sandbox process error: ${e instanceof Error ? e.stack ?? e.message : String(e)}`;
      send({ type: 'run-result', id: raw.id, results: raw.calls.map(() => ({ ok: false, failure: { kind: 'runtime-error', reason } })), childMs: performance.now() - t0, isolateLoads });
    },
  );
});

/**
 * Makes fresh contexts for the harness's next batch while this process waits for the worker (the model
 * is generating): one per turn of the event loop, so a request that arrives waits for at most one.
 */
function prepareSpares(harness: IsolateHarness | undefined): void {
  if (!harness) return;
  setImmediate(() => {
    if (harness.prepareSpare()) prepareSpares(harness);
  });
}

process.on('disconnect', () => process.exit(0));
send({ type: 'ready', pid: process.pid });
