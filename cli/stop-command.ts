// `whale stop <run> [--abandon-step] [--wait]`: a graceful stop through the run's durable `stop` signal
// (it reaches the run even while no worker runs). By default the step in flight finishes, the open phase is
// closed and the final test evaluation runs; with --abandon-step the step in flight is cancelled and the run
// ends at once. Either way the run completes normally with `stoppedEarly` in its result, so its history and
// audit stay whole.
import type { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { stopRunSignal, type StopMode } from '../workflows/whale-run-messages';
import { formatSummary } from './follow';
import { parseDurationMs } from './gc-command';
import type { RunSummary } from '../workflows/run-state';
import { printJson } from './options';

/** Sends the stop signal to a running run; throws a clear error when the run is not running. */
export async function requestStop(client: Client, workflowId: string, mode: StopMode): Promise<{ runId: string }> {
  const handle = client.workflow.getHandle(workflowId);
  let status: string;
  let runId: string;
  try {
    const d = await handle.describe();
    status = d.status.name;
    runId = d.runId;
  } catch (err) {
    throw new Error(`no run ${workflowId} in namespace '${client.options.namespace}': ${(err as Error).message} (\`whale list\` shows the runs)`);
  }
  if (status !== 'RUNNING') throw new Error(`run ${workflowId} is not running (status ${status}): there is nothing to stop`);
  await handle.signal(stopRunSignal, { mode });
  return { runId };
}

/** Waits for a stopped run to close and returns its summary (throws after `timeoutMs`). */
export async function waitForStop(client: Client, workflowId: string, timeoutMs: number | null): Promise<RunSummary> {
  const result = client.workflow.getHandle(workflowId).result() as Promise<RunSummary>;
  if (timeoutMs === null) return result;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`run ${workflowId} has not ended ${timeoutMs} ms after the stop request: is a worker running? (\`whale status ${workflowId}\`)`)), timeoutMs);
  });
  try {
    return await Promise.race([result, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function registerStopCommand(program: Command): void {
  program
    .command('stop')
    .description('stop a run gracefully: finish the step in flight, close the phase, run the final test evaluation (works while no worker runs)')
    .argument('<workflowId>')
    .option('--abandon-step', 'cancel the step in flight and end the run at once (no final evaluation)')
    .option('--wait', 'wait until the run has ended and print its summary')
    .option('--timeout <duration>', 'with --wait: give up waiting after this long (e.g. 10m); the stop request stays')
    .option('--json', 'print one JSON document { workflowId, runId, mode, summary } (summary with --wait only; null without)')
    .action(async (workflowId: string, opts: { abandonStep?: boolean; wait?: boolean; timeout?: string; json?: boolean }) => {
      const mode: StopMode = opts.abandonStep ? 'abandon-step' : 'finish-step';
      const timeoutMs = opts.timeout ? parseDurationMs(opts.timeout) : null;
      const client = await connectClient(loadTemporalConfig());
      const { runId } = await requestStop(client, workflowId, mode);
      if (opts.json) {
        printJson({ workflowId, runId, mode, summary: opts.wait ? await waitForStop(client, workflowId, timeoutMs) : null });
        return;
      }
      process.stdout.write(`stop (${mode}) sent to ${workflowId} (run ${runId}); ${mode === 'finish-step' ? 'it finishes the step in flight, closes the phase and runs the final test evaluation' : 'the step in flight is cancelled and the run ends'}\n`);
      if (!opts.wait) {
        process.stdout.write(`follow it with \`whale status ${workflowId}\`; audit it with \`whale audit ${workflowId}\`\n`);
        return;
      }
      const summary = await waitForStop(client, workflowId, timeoutMs);
      process.stdout.write(formatSummary(summary) + '\n');
    });
}
