// What the runs Temporal still knows reference in the artifact store: every sha256 and harness archive key
// that appears anywhere in a run's history (workflow input, activity inputs and results, failures with
// their last heartbeat, continue-as-new state, memo) and, for a running run, in its pending activities'
// heartbeats. A run whose history Temporal no longer has (deleted, or past the namespace retention)
// references nothing. Used by `whale gc` (the live set) and `whale status` (one run's disk use).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { addHashesFrom, type LiveReferences } from './gc';

/** Margin subtracted from an attempt's start time when protecting what it writes (file times lag by a clock tick). */
const START_CLOCK_SLACK_MS = 20;

// PendingActivityState values (temporal.api.enums.v1).
const STARTED = 2;
const CANCEL_REQUESTED = 3;
const ARCHIVE_KEY_RE = /"archiveKey"\s*:\s*"((?:[^"\\]|\\.)+)"/g;

/** Adds the hashes and archive keys found in any value (protobuf objects, payload bytes, strings). */
export function scanForReferences(value: unknown, into: { hashes: Set<string>; archiveKeys: Set<string> }): void {
  const seen = new Set<object>();
  const text = (s: string) => {
    addHashesFrom(s, into.hashes);
    for (const m of s.matchAll(ARCHIVE_KEY_RE)) into.archiveKeys.add(JSON.parse(`"${m[1]}"`) as string);
  };
  const visit = (v: unknown): void => {
    if (typeof v === 'string') return text(v);
    if (typeof v !== 'object' || v === null || seen.has(v)) return;
    seen.add(v);
    if (v instanceof Uint8Array) return text(Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8'));
    if (Array.isArray(v)) return v.forEach(visit);
    for (const x of Object.values(v)) visit(x);
  };
  visit(value);
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; code?: number; message?: string };
  return e?.name === 'WorkflowNotFoundError' || e?.code === 5 || /not found/i.test(e?.message ?? '');
}

export interface RunReferenceSummary { workflowId: string; runId: string; status: string; hashes: number }

/**
 * Collects the references of every execution the namespace lists (every workflow type and status, each
 * run of a continue-as-new chain). A run deleted between listing and reading references nothing; any
 * other error aborts, because a partial live set would let gc remove what a run still needs.
 */
export async function collectLiveReferences(client: Client, pins: Iterable<string> = []): Promise<LiveReferences & { runs: RunReferenceSummary[] }> {
  const live = { hashes: new Set<string>(pins), archiveKeys: new Set<string>(), protectSinceMs: null as number | null, runs: [] as RunReferenceSummary[] };
  for await (const w of client.workflow.list()) {
    const handle = client.workflow.getHandle(w.workflowId, w.runId);
    const own = { hashes: new Set<string>(), archiveKeys: new Set<string>() };
    try {
      if (w.status.name === 'RUNNING') {
        // Describe before reading the history: an activity that completes in between is either still
        // pending here (its writes are protected by its start time) or already in the history read next.
        const d = await handle.describe();
        for (const a of d.raw.pendingActivities ?? []) {
          scanForReferences(a.heartbeatDetails, own);
          // Only an attempt that is running can be writing; one waiting for a worker or a retry writes nothing.
          if (a.state !== STARTED && a.state !== CANCEL_REQUESTED) continue;
          const t = a.lastStartedTime;
          // No start time: protect everything rather than guess.
          // File times come from the kernel's coarse clock (up to a tick, ~4 ms, behind the server's stamp;
          // a write made right after the start can look older than it): keep a margin.
          const ms = t?.seconds != null ? Math.max(0, Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) - START_CLOCK_SLACK_MS) : 0;
          live.protectSinceMs = Math.min(live.protectSinceMs ?? ms, ms);
        }
      }
      scanForReferences(await handle.fetchHistory(), own);
    } catch (err) {
      if (isNotFound(err)) continue;
      throw new Error(`cannot read the history of ${w.workflowId} (run ${w.runId}): ${(err as Error).message}; gc stops rather than guess what it references`);
    }
    for (const h of own.hashes) live.hashes.add(h);
    for (const k of own.archiveKeys) live.archiveKeys.add(k);
    live.runs.push({ workflowId: w.workflowId, runId: w.runId, status: w.status.name, hashes: own.hashes.size });
  }
  return live;
}

/** The references of one workflow id: every run of its continue-as-new chain that Temporal still has. */
export async function collectRunReferences(client: Client, workflowId: string): Promise<{ hashes: Set<string>; archiveKeys: Set<string>; runs: number }> {
  const own = { hashes: new Set<string>(), archiveKeys: new Set<string>() };
  let runs = 0;
  const escaped = workflowId.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
  for await (const w of client.workflow.list({ query: `WorkflowId = '${escaped}'` })) {
    try {
      scanForReferences(await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory(), own);
      runs += 1;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return { ...own, runs };
}

/**
 * Pinned content: the committed base policies and the built-in seed harnesses, which prepareRun stores
 * for every new run (a run starting while gc runs must find them).
 */
export function pinnedHashes(projectRoot: string): string[] {
  const files: string[] = [];
  const basePolicies = path.join(projectRoot, 'data', 'base-policies');
  if (existsSync(basePolicies)) for (const f of readdirSync(basePolicies)) if (f.endsWith('.ckpt')) files.push(path.join(basePolicies, f));
  const domains = path.join(projectRoot, 'domains');
  if (existsSync(domains)) {
    for (const d of readdirSync(domains)) {
      const h0 = path.join(domains, d, 'harnesses', 'h0.ts');
      if (existsSync(h0)) files.push(h0);
    }
  }
  return files.map((f) => createHash('sha256').update(readFileSync(f)).digest('hex'));
}
