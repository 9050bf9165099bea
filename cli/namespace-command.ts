// `whale namespace setup`: prepares the configured namespace on any reachable server (registers it when
// missing, adds the project's search attributes, sets the retention); idempotent. The logic is
// workers/namespace.ts, which the workers' start-up check shares.
import type { Command } from 'commander';
import { Connection } from '@temporalio/client';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { retentionSeconds, setupNamespace } from '../workers/namespace';
import { asUsage, printJson } from './options';

export function registerNamespaceCommand(program: Command): void {
  const ns = program.command('namespace').description("prepare a Temporal namespace for WHALE runs (search attributes, retention) on any reachable server");
  ns
    .command('setup')
    .description('register the namespace if missing, add the search attributes runs record (WhalePhase, WhaleStep, ...) and set the retention; safe to repeat')
    .option('--retention <duration>', 'how long closed runs stay (e.g. 720h, 30d; default: the devServer.retention setting, as `whale dev` sets it)')
    .option('--json', 'print the outcome as one JSON document')
    .action(async (opts: { retention?: string; json?: boolean }) => {
      const config = loadTemporalConfig();
      const retention = opts.retention ?? config.devServer.retention;
      asUsage(() => retentionSeconds(retention));
      const client = await connectClient(config);
      try {
        const result = await setupNamespace(client.connection as Connection, { namespace: config.namespace, address: config.address, retention });
        if (opts.json) {
          printJson({ address: config.address, ...result });
          return;
        }
        const r = result.retention;
        process.stdout.write(
          `namespace ${result.namespace} at ${config.address}${result.created ? ' (registered now)' : ''}\n` +
            `  search attributes: ${result.added.length ? `added ${result.added.join(', ')}` : 'none added'}; ${result.alreadyPresent.length} already present\n` +
            `  retention: ${r.changed ? `${r.before === null ? 'unset' : `${r.before / 3600}h`} -> ` : ''}${r.after / 3600}h${r.changed ? '' : ' (unchanged)'}\n`,
        );
      } finally {
        await client.connection.close();
      }
    });
}
