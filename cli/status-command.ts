// `whale status <run>`: where a run stands and what it waits on, from the server alone (no worker needed);
// the view itself is built in status.ts.
import type { Command } from 'commander';
import * as path from 'node:path';
import { PROJECT_ROOT } from './paths';
import { printJson } from './options';

export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('show where a run stands and what it waits on (works while no worker runs)')
    .argument('<workflowId>')
    .option('--json', 'print JSON')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      // Loaded when the command runs, so `whale status --help` and a usage error stay quick.
      const { loadTemporalConfig } = require('../temporal.config') as typeof import('../temporal.config');
      const { connectClient } = require('../workers/connection') as typeof import('../workers/connection');
      const { describeRun, formatStatus, runDiskUse } = require('./status') as typeof import('./status');
      const config = loadTemporalConfig();
      const client = await connectClient(config);
      const view = await describeRun(client, workflowId);
      view.disk = await runDiskUse(client, workflowId, path.resolve(PROJECT_ROOT, config.artifactDir));
      if (opts.json) printJson(view);
      else process.stdout.write(formatStatus(view) + '\n');
    });
}
