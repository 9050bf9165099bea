// `whale track`: reads a run's workflow histories (and its description for the current phase), writes its
// audit report and exports both through a RunExporter, once or until the run ends. Outside the workflow:
// it only reads, so the run's history is the same whether or not anyone tracks it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { buildTimeline, fetchHistories } from '../audit/timeline';
import { explainPhases } from '../audit/explain';
import { writeReport } from '../audit/report';
import { WhalePhase, WhaleRunState } from '../workflows/search-attributes';
import type { ExportResult, RunExporter } from './exporter';
import { trackedRun } from './run-metrics';

type History = temporal.api.history.v1.IHistory;

export interface TrackSource {
  workflowId: string;
  /** Reads the chain's histories again (a server) or returns fixed ones (exported files). */
  histories(): Promise<History[]>;
  /** Tags from the run's description (current phase and run state); empty without a server. */
  describeTags(): Promise<Record<string, string>>;
  /** Resolves when the run closes, or after `ms` (whichever first); without a server at once. */
  waitForChange(ms: number): Promise<void>;
}

export function serverSource(client: Client, workflowId: string): TrackSource {
  return {
    workflowId,
    async histories() {
      try {
        return await fetchHistories(client, workflowId);
      } catch (err) {
        // Visibility (the list of a chain's runs) can lag a run started a moment ago: its own history then.
        const handle = client.workflow.getHandle(workflowId);
        if (!(await handle.describe().then(() => true, () => false))) throw err;
        return [await handle.fetchHistory()];
      }
    },
    async describeTags() {
      const d = await client.workflow.getHandle(workflowId).describe();
      const tags: Record<string, string> = {};
      const phase = d.typedSearchAttributes.get(WhalePhase);
      const state = d.typedSearchAttributes.get(WhaleRunState);
      if (phase !== undefined) tags['whale.phase'] = phase;
      if (state !== undefined) tags['whale.run_state'] = state;
      return tags;
    },
    async waitForChange(ms) {
      // The result of the latest run of the chain (a continue-as-new is followed); a failure also ends the wait.
      let timer: NodeJS.Timeout | undefined;
      const closed = client.workflow.getHandle(workflowId).result().then(() => undefined, () => undefined);
      await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
      clearTimeout(timer);
    },
  };
}

export function historySource(workflowId: string, histories: History[]): TrackSource {
  return { workflowId, histories: async () => histories, describeTags: async () => ({}), waitForChange: async () => undefined };
}

export interface TrackOptions {
  /** Keep exporting until the run closes. */
  follow?: boolean;
  /** Between exports while following. */
  intervalMs?: number;
  /** Upload the audit report folder (default true). */
  artifacts?: boolean;
  /** Where the report is written before upload (default: a temporary folder, removed afterwards). */
  reportDir?: string;
  log?: (line: string) => void;
}

/** One export pass: histories -> timeline -> tracked run (+ audit report) -> exporter. */
export async function exportOnce(source: TrackSource, exporter: RunExporter, opts: TrackOptions = {}): Promise<ExportResult & { status: string }> {
  const histories = await source.histories();
  const timeline = buildTimeline(source.workflowId, histories);
  const run = trackedRun(timeline, histories, await source.describeTags().catch(() => ({})));
  let dir: string | null = null;
  let temporary = false;
  if (opts.artifacts !== false) {
    temporary = !opts.reportDir;
    dir = opts.reportDir ? path.resolve(opts.reportDir) : mkdtempSync(path.join(tmpdir(), 'whale-track-'));
    await writeReport(timeline, explainPhases(timeline), dir);
  }
  try {
    return { ...(await exporter.exportRun(run, dir)), status: run.status };
  } finally {
    if (temporary && dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** Exports once, or (follow) again after each interval until the run is no longer running. */
export async function track(source: TrackSource, exporter: RunExporter, opts: TrackOptions = {}): Promise<ExportResult & { status: string }> {
  const log = opts.log ?? (() => undefined);
  for (;;) {
    const r = await exportOnce(source, exporter, opts);
    log(`[whale] ${source.workflowId} (${r.status}) -> ${exporter.describe}: ${r.created ? 'created' : 'updated'} run ${r.trackerRunId}; ${r.metricsLogged} new metric point(s), ${r.metricsAlreadyThere} already there, ${r.artifactsUploaded} artifact file(s)${r.url ? `; ${r.url}` : ''}`);
    if (!opts.follow || r.status !== 'running') return r;
    await source.waitForChange(opts.intervalMs ?? 15_000);
  }
}
