// `whale list`: the runs in the namespace with phase, step and best score, from their search attributes.
import type { Command } from 'commander';
import { configuredClient, printJson } from './options';

export function registerListCommand(program: Command): void {
  program
    .command('list')
    .description('list runs with phase, step and best score (from search attributes)')
    .option('-q, --query <query>', "extra visibility query, e.g. \"WhalePhase = 'harness-1'\" or 'WhaleBestScore > 0.3'")
    .option('--limit <n>', 'at most this many', '50')
    .option('--json', 'print JSON rows')
    .action(async (opts: { query?: string; limit: string; json?: boolean }) => {
      const { formatRunTable, listRunRows } = require('./status') as typeof import('./status');
      const client = await configuredClient();
      const rows = await listRunRows(client, opts.query, Number(opts.limit));
      if (opts.json) printJson(rows);
      else process.stdout.write(formatRunTable(rows).join('\n') + '\n');
    });
}
