// `whale track <workflowId>`: exports a run's metrics, config and audit report to an experiment tracker
// (MLflow), once or following the run until it ends; reads the run, never writes to it.
import type { Command } from 'commander';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { readHistoryFiles } from '../audit/timeline';
import { MlflowError, MlflowExporter } from '../track/mlflow';
import { historySource, serverSource, track } from '../track/track';

/** A usage error: said without a stack, exit code 2, before anything is read or exported. */
function usage(message: string): never {
  process.stderr.write(`whale: ${message}\n`);
  process.exit(2);
}

export function registerTrackCommand(program: Command): void {
  program
    .command('track')
    .description("export a run's metrics, config and audit report to MLflow (one MLflow run per WHALE run; re-running adds only new points)")
    .argument('[workflowId]', 'the run to export (reads its histories from the server)')
    .option('--mlflow-uri <url>', 'the MLflow tracking server (default: MLFLOW_TRACKING_URI)')
    .option('--experiment <name>', 'the MLflow experiment (created if missing)', 'whale')
    .option('--history <files...>', 'exported history JSON files (temporal workflow show --output json), oldest run first; no Temporal server needed')
    .option('--follow', 'keep exporting until the run ends')
    .option('--interval-s <s>', 'with --follow: seconds between exports', '15')
    .option('--no-artifacts', 'do not upload the audit report')
    .option('--report-dir <dir>', 'keep the uploaded audit report in this folder (default: a temporary folder)')
    .option('--json', 'print the result as JSON')
    .action(async (workflowId: string | undefined, opts: { mlflowUri?: string; experiment: string; history?: string[]; follow?: boolean; intervalS: string; artifacts: boolean; reportDir?: string; json?: boolean }) => {
      const uri = opts.mlflowUri ?? process.env.MLFLOW_TRACKING_URI;
      if (!uri) usage('give --mlflow-uri <url> (or set MLFLOW_TRACKING_URI) naming the MLflow tracking server, e.g. http://127.0.0.1:5000');
      if (!workflowId && !opts.history) usage('give a workflow id, or --history <file...> to export an exported history');
      if (opts.history && opts.follow) usage('--follow needs a live run on a server, not --history files');
      if (!/^\d+(\.\d+)?$/.test(opts.intervalS) || Number(opts.intervalS) <= 0) usage(`--interval-s must be a positive number of seconds; got '${opts.intervalS}'`);
      let exporter: MlflowExporter;
      try {
        exporter = new MlflowExporter(uri, opts.experiment);
      } catch (err) {
        if (err instanceof MlflowError) usage(err.message);
        throw err;
      }
      const id = workflowId ?? opts.history![0].replace(/^.*\//, '').replace(/\.json$/, '');
      const source = opts.history ? historySource(id, readHistoryFiles(opts.history)) : serverSource(await connectClient(loadTemporalConfig()), id);
      const result = await track(source, exporter, {
        follow: opts.follow, intervalMs: Number(opts.intervalS) * 1000, artifacts: opts.artifacts, reportDir: opts.reportDir,
        log: (line) => process.stderr.write(`${line}\n`),
      });
      process.stdout.write(opts.json ? JSON.stringify({ workflowId: id, ...result }, null, 2) + '\n' : `${result.url ?? result.trackerRunId}\n`);
    });
}
