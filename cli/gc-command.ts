// `whale gc`: removes artifacts that no live or retained run references. A dry run by default: it lists
// what would go and how many bytes; `--yes` removes. The live set comes from Temporal (every run it still
// lists, running or closed within the namespace retention) plus pinned content; the rules are in store/gc.ts.
import type { Command } from 'commander';
import * as path from 'node:path';
import { existsSync } from 'node:fs';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { applyGc, formatBytes, planGc, type GcPlan } from '../store/gc';
import { collectLiveReferences, pinnedHashes } from '../store/run-references';
import { PROJECT_ROOT } from './paths';

const DURATION_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDurationMs(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) throw new Error(`invalid duration ${JSON.stringify(text)}: use a number and a unit, e.g. 30s, 10m, 1h, 2d`);
  return Number(m[1]) * DURATION_MS[m[2]];
}

function age(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)}s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)}m`;
  if (ms < 86_400_000) return `${(ms / 3_600_000).toFixed(1)}h`;
  return `${(ms / 86_400_000).toFixed(1)}d`;
}

export function formatPlan(plan: GcPlan): string {
  const lines: string[] = [];
  const n = plan.objects.length + plan.names.length + plan.archives.length + plan.tempFiles.length + plan.stepFolders.length;
  const kept = `kept ${plan.kept.objects} objects, ${formatBytes(plan.kept.bytes)}; ${plan.kept.names} name bindings; ${plan.kept.archives} archives; ${plan.kept.stepFolders} trainer step folders`;
  lines.push(n === 0
    ? `nothing to remove (${kept})`
    : `${plan.objects.length} objects, ${plan.names.length} name bindings, ${plan.archives.length} archives, ${plan.tempFiles.length} temp files, ${plan.stepFolders.length} trainer step folders: ${formatBytes(plan.bytes)} (${kept})`);
  for (const o of plan.objects) lines.push(`  object   ${o.sha256}  ${o.kind.padEnd(10)} ${formatBytes(o.bytes).padStart(10)}  age ${age(o.ageMs)}`);
  for (const b of plan.names) lines.push(`  name     ${b.name} -> ${b.target}`);
  for (const a of plan.archives) lines.push(`  archive  ${a.key}  (${a.files} files, ${formatBytes(a.bytes)})`);
  for (const t of plan.tempFiles) lines.push(`  temp     ${t.file}  ${formatBytes(t.bytes)}`);
  for (const f of plan.stepFolders) lines.push(`  step     external-trainer/${f.key}  (${f.files} files, ${formatBytes(f.bytes)})`);
  return lines.join('\n');
}

export function registerGcCommand(program: Command): void {
  program
    .command('gc')
    .description('remove artifacts no live or retained run references (a dry run unless --yes)')
    .option('--dry-run', 'list what would be removed and how many bytes (the default)')
    .option('--yes', 'remove them')
    .option('--grace <duration>', 'never remove anything modified more recently than this (e.g. 30m, 1h, 2d)', '1h')
    .option('--store <dir>', 'artifact store directory (default: WHALE_ARTIFACT_DIR or .data/artifacts)')
    .option('--json', 'print the plan (and result) as JSON')
    .action(async (opts: { dryRun?: boolean; yes?: boolean; grace: string; store?: string; json?: boolean }) => {
      if (opts.yes && opts.dryRun) throw new Error('give either --dry-run or --yes, not both');
      const graceMs = parseDurationMs(opts.grace);
      const config = loadTemporalConfig();
      const root = path.resolve(opts.store ?? path.resolve(PROJECT_ROOT, config.artifactDir));
      if (!existsSync(root)) throw new Error(`no artifact store at ${root}: check --store or WHALE_ARTIFACT_DIR`);
      const client = await connectClient(config);
      const live = await collectLiveReferences(client, pinnedHashes(PROJECT_ROOT));
      const plan = await planGc(root, live, { graceMs });
      const header = `gc of ${root}: ${live.runs.length} runs in namespace '${config.namespace}' at ${config.address} (running or retained), grace ${opts.grace}`;
      if (!opts.yes) {
        if (opts.json) process.stdout.write(JSON.stringify({ dryRun: true, runs: live.runs.length, plan }, null, 2) + '\n');
        else process.stdout.write(`${header}\nwould remove ${formatPlan(plan)}\ndry run: nothing removed; \`whale gc --yes\` removes these\n`);
        return;
      }
      const result = await applyGc(plan);
      if (opts.json) {
        process.stdout.write(JSON.stringify({ dryRun: false, runs: live.runs.length, plan, result }, null, 2) + '\n');
        return;
      }
      process.stdout.write(`${header}\nremoving ${formatPlan(plan)}\n`);
      for (const s of result.skipped) process.stdout.write(`  skipped ${s}\n`);
      process.stdout.write(`removed ${result.removed.objects} objects, ${result.removed.names} name bindings, ${result.removed.archives} archives, ${result.removed.tempFiles} temp files, ${result.removed.stepFolders} trainer step folders: ${formatBytes(result.bytes)} freed\n`);
    });
}
