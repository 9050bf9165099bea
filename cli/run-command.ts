// `whale run [config]`: starts a run as `whale start` does and follows it with a live progress line (on
// stderr) until it ends; prints the run's summary, or with --json one JSON document { workflowId, summary }.
import type { Command } from 'commander';
import { followRun, formatSummary } from './follow';
import { addRunStartOptions, printJson } from './options';
import { startRun, type StartOptions } from './start-command';

export function registerRunCommand(program: Command): void {
  addRunStartOptions(program.command('run').description('start a run (file or --preset) and follow it with a live progress line until it ends'))
    .option('--json', 'print the run\'s summary as one JSON document on stdout (progress stays on stderr)')
    .action(async (file: string | undefined, opts: StartOptions & { json?: boolean }) => {
      const { client, workflowId } = await startRun(file, opts);
      process.stderr.write(`[whale] run ${workflowId} started; Ctrl-C stops following (the run goes on; \`whale status ${workflowId}\`)\n`);
      const summary = await followRun(client, workflowId, process.stderr);
      if (opts.json) printJson({ workflowId, summary });
      else process.stdout.write(formatSummary(summary) + '\n');
    });
}
