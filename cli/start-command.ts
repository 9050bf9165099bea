// `whale start [config]`: starts a run from a JSON run config or a preset (with --seed, --domain, --from
// applied) and prints its workflow id; `startRun` is shared with `whale run`.
import type { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { loadTemporalConfig } from '../temporal.config';
import { expandRunConfig } from '../workflows/run-config';
import { runDetails, runSummary } from '../workflows/user-metadata';
import { connectClient } from '../workers/connection';
import { domainLabel } from '../domains/external';
import { listPresets, loadPreset } from './follow';
import { applyCliRunSources, RunSourceError, type RunSourceCliOptions } from './run-sources';
import { addRunStartOptions, readRunConfig, UsageError } from './options';

export type StartOptions = { id?: string; preset?: string; seed?: string } & RunSourceCliOptions;

/** Checks and expands the run config, starts the run, and returns the client and the run's workflow id. */
export async function startRun(file: string | undefined, opts: StartOptions): Promise<{ client: Client; workflowId: string }> {
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
  // The Web UI shows the summary (method, domain, seed) in the run list and the details on the run's page.
  await client.workflow.start('whaleRun', { taskQueue: config.taskQueues.orchestration, workflowId, args: [raw], staticSummary: runSummary(c), staticDetails: runDetails(c) });
  return { client, workflowId };
}

export function registerStartCommand(program: Command): void {
  addRunStartOptions(program.command('start').description('start a run from a JSON run config or a preset; prints its workflow id'))
    .action(async (file: string | undefined, opts: StartOptions) => {
      const { workflowId } = await startRun(file, opts);
      process.stdout.write(`${workflowId}\n`);
    });
}
