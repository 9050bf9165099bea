// `whale audit [run]`: the audit report (summary.md, SVG plots, index.html) from a run's workflow history,
// read from the server or from exported history files; exit 1 when a recomputed decision disagrees.
import type { Command } from 'commander';
import * as path from 'node:path';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { buildTimeline, fetchHistories, readHistoryFiles } from '../audit/timeline';
import { explainPhases } from '../audit/explain';
import { writeReport } from '../audit/report';
import { pointerModels } from '../audit/pointers';
import { webUiRunUrl } from '../audit/web-ui';
import { PROJECT_ROOT } from './paths';
import { printJson, UsageError } from './options';

export function registerAuditCommand(program: Command): void {
  program
    .command('audit')
    .description('write an audit report (summary.md, SVG plots, index.html) from a run\'s workflow history')
    .argument('[workflowId]', 'the run to audit (reads every run of its continue-as-new chain from the server)')
    .option('--history <files...>', 'exported history JSON files (temporal workflow show --output json), oldest run first; no server needed')
    .option('--out <dir>', 'report folder (default: reports/audit-<workflowId>)')
    .option('--json', 'print one JSON document: the report folder, its files, and each phase\'s recomputed and recorded rule')
    .action(async (workflowId: string | undefined, opts: { history?: string[]; out?: string; json?: boolean }) => {
      if (!workflowId && !opts.history) throw new UsageError('give a workflow id, or --history <file...> to audit an exported history');
      const id = workflowId ?? path.basename(opts.history![0], '.json');
      const histories = opts.history ? readHistoryFiles(opts.history) : await fetchHistories(await connectClient(loadTemporalConfig()), id);
      const timeline = buildTimeline(id, histories);
      const phases = explainPhases(timeline);
      const out = path.resolve(opts.out ?? path.join('reports', `audit-${id}`));
      // A run on a served model: name the folders its checkpoint pointers point to (from the local store).
      const models = await pointerModels(timeline, path.resolve(PROJECT_ROOT, loadTemporalConfig().artifactDir));
      // Read from the server: link the run's page in that server's Web UI (an exported history may come from anywhere).
      const webUiUrl = opts.history ? null : webUiRunUrl(loadTemporalConfig(), id);
      const files = await writeReport(timeline, phases, out, models, { webUiUrl });
      const mismatches = phases.filter((p) => p.matches === false).length;
      if (opts.json) {
        printJson({
          workflowId: id, status: timeline.status, out, files: files.map((f) => path.join(out, f)), mismatches,
          phases: phases.map(({ trace: _trace, ...p }) => p),
        });
      } else {
        process.stdout.write(`audit of ${id}: ${phases.length} phases explained, ${mismatches} mismatch(es); wrote ${files.map((f) => path.join(out, f)).join(', ')}\n`);
      }
      if (mismatches > 0) process.exitCode = 1;
    });
}
