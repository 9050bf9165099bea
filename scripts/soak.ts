// The fault-injection soak: a small deterministic WHALE run on a real dev server with one worker
// process per task queue, interrupted by a seeded schedule of SIGKILL/SIGTERM kills of the workers and the
// server, compared with the same run uninterrupted. Prints the kill log, the lost-work counter and the
// comparison; exits 1 when the run fails, differs, or loses more than the bound. See docs/faults.md.
//
//   nice -n 19 node --import tsx scripts/soak.ts --seed 1 --kills 30          # the acceptance soak
//   nice -n 19 node --import tsx scripts/soak.ts --seed 1 --server-kills 3    # server loss only: nothing lost
import { parseArgs } from 'node:util';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { runSoak, WORKER_TARGETS, type KillTarget, type SoakReport } from '../testbed/soak-run';
import { ROOT } from '../testbed/env';

const USAGE = `usage: node --import tsx scripts/soak.ts [--seed N] [--kills N] [--server-kills N] [--steps N]
  [--heartbeat SECONDS] [--targets a,b] [--no-cache] [--json FILE] [--keep] [--port N] [--deadline-minutes N]

  --kills N          kills in all (default 30; with only --server-kills given: that many)
  --server-kills N   how many of the kills hit the dev server (default: kills / 10)
  --steps N          weight steps of the run (default: the number of kills, at least 6)
  --phase-steps N    weight steps per weight phase; a harness phase runs between them (default 3)
  --heartbeat S      heartbeat timeout of every activity in seconds (default 10; 30 when only the server is killed)
  --targets LIST     worker targets to draw from (default all): ${WORKER_TARGETS.join(', ')}
  --no-cache         always run the uninterrupted reference (default: reuse .data/soak/reference-<key>.json
                     when the config and the product source are unchanged)`;

function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string', default: '1' }, kills: { type: 'string' }, 'server-kills': { type: 'string' }, steps: { type: 'string' }, 'phase-steps': { type: 'string' },
      heartbeat: { type: 'string' }, targets: { type: 'string' }, 'no-cache': { type: 'boolean', default: false },
      json: { type: 'string' }, keep: { type: 'boolean', default: false }, port: { type: 'string' }, 'deadline-minutes': { type: 'string', default: '120' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return Promise.resolve(0);
  }
  const int = (name: string, raw: string | undefined, min: number): number | undefined => {
    if (raw === undefined) return undefined;
    const v = Number(raw);
    if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}\n${USAGE}`);
    return v;
  };
  const serverKillsArg = int('server-kills', values['server-kills'], 0);
  const kills = int('kills', values.kills, 0) ?? (serverKillsArg !== undefined ? serverKillsArg : 30);
  const serverKills = serverKillsArg ?? Math.floor(kills / 10);
  if (serverKills > kills) throw new Error(`--server-kills (${serverKills}) cannot exceed --kills (${kills})`);
  const targets = values.targets?.split(',').map((t) => t.trim()) as KillTarget[] | undefined;
  for (const t of targets ?? []) if (!WORKER_TARGETS.includes(t)) throw new Error(`unknown target '${t}': use ${WORKER_TARGETS.join(', ')}`);
  // Long enough for the kills: each activity is killed at most once, and a kill with its recovery takes
  // about 15 s on a quiet machine while 4 steps run in about 30 s.
  const steps = int('steps', values.steps, 1) ?? Math.max(6, kills);
  const stepsPerPhase = int('phase-steps', values['phase-steps'], 1) ?? 3;
  const started = Date.now();
  return runSoak({
    seed: int('seed', values.seed, 0) ?? 1, kills, serverKills, targets, steps, stepsPerPhase,
    // Server loss only: longer than the server is down, or a heartbeat deadline that passes meanwhile redoes work.
    heartbeatSeconds: int('heartbeat', values.heartbeat, 2) ?? (serverKills === kills ? 30 : 10),
    referenceCache: values['no-cache'] ? null : path.join(ROOT, '.data', 'soak', 'reference-{key}.json'),
    deadlineMs: (int('deadline-minutes', values['deadline-minutes'], 1) ?? 120) * 60_000,
    port: int('port', values.port, 1024), keepDir: values.keep,
    log: (l) => console.log(l),
  }).then((report) => {
    printReport(report, Date.now() - started);
    // Paths inside the project are written relative to it: a committed report names no machine's folders.
    if (values.json) writeFileSync(values.json, JSON.stringify(report, (_k, v: unknown) => (typeof v === 'string' && v.startsWith(ROOT + path.sep) ? path.relative(ROOT, v) : v), 2));
    return report.failures.length ? 1 : 0;
  });
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(rows[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}

export function printReport(r: SoakReport, wallMs: number): void {
  const o = r.options;
  console.log(`\n## Soak: seed ${o.seed}, ${r.kills.length} kills (${r.kills.filter((k) => k.target === 'server').length} of the server), ${o.steps} weight steps (${o.stepsPerPhase} per phase), heartbeat timeout ${o.heartbeatSeconds} s\n`);
  console.log(table([
    ['#', 't (s)', 'target', 'signal', 'state at the kill', 'recovery (s)', 'redone rollouts', 'redone minibatches', 'redone (s)', 'bound (s)', 'ok'],
    ...r.kills.map((k) => [
      String(k.n), (k.atMs / 1000).toFixed(1), k.target, k.signal, k.state.slice(0, 60), k.recoveryMs === null ? '?' : (k.recoveryMs / 1000).toFixed(1),
      String(k.redoneRollouts), String(k.redoneMinibatches), k.redoneSeconds.toFixed(1), k.boundSeconds.toFixed(1), k.withinBound ? 'yes' : 'NO',
    ]),
  ]));
  const byTarget = new Map<string, number>();
  for (const k of r.kills) byTarget.set(k.target, (byTarget.get(k.target) ?? 0) + 1);
  console.log(`\nkills by target: ${[...byTarget.entries()].map(([t, n]) => `${t} ${n}`).join(', ')}`);
  console.log('\n' + table([
    ['check', 'uninterrupted', 'killed', 'equal'],
    ...r.comparisons.map((c) => [c.name, c.reference, c.killed, c.equal ? 'yes' : 'NO']),
  ]));
  const l = r.lostWork;
  console.log(`\nlost work (executed more than once): ${l.rollouts} rollouts, ${l.minibatches} minibatches`
    + ` (journal totals, killed minus uninterrupted: ${l.byJournalDifference.rollouts} rollouts, ${l.byJournalDifference.minibatches} minibatches)`);
  console.log(`work executed: uninterrupted ${r.reference.executed.rollouts} rollouts / ${r.reference.executed.minibatches} minibatches; killed ${r.killed.executed.rollouts} / ${r.killed.executed.minibatches}`);
  console.log(`history: activity retries ${JSON.stringify(r.history.activityRetries)}, workflow tasks timed out ${r.history.workflowTaskTimeouts}, failed ${r.history.workflowTaskFailures}`);
  console.log(`artifact store: ${r.store.objects} objects, ${r.store.corrupt.length} corrupt, ${r.store.orphanTmp} temp files left by killed writers (never read)`);
  console.log(`durations: uninterrupted ${(r.reference.durationMs / 1000).toFixed(0)} s${r.reference.fromCache ? ' (cached)' : ''}, killed ${(r.killed.durationMs / 1000).toFixed(0)} s, soak wall time ${(wallMs / 1000).toFixed(0)} s`);
  if (r.unplannedExits.length) console.log(`unplanned worker exits:\n  ${r.unplannedExits.join('\n  ')}`);
  console.log(r.failures.length ? `\nFAILED:\n  - ${r.failures.join('\n  - ')}` : '\nPASSED: the run completed under every kill, matched the uninterrupted run, and lost no more than the bound per kill');
}

if (require.main === module) {
  main().then((code) => process.exit(code), (err: Error) => {
    console.error(`soak failed: ${err.stack ?? err.message}`);
    process.exit(1);
  });
}
