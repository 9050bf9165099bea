// The headroom report: per domain, mean@8 on D_test of the committed base policy under h0 and under the
// reference harness, and after RSFT under h0 (the recipe of docs/method.md; several seeds). Results merge into
// reports/headroom.json (so domains can be measured in separate invocations) and the markdown table
// reports/headroom.md is rendered from all of them and printed.
//   node --import tsx scripts/headroom-report.ts --domains math --seeds 1,2,3 --rsft-steps 30 [--test-tasks 256] [--lr 1e-4]
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { decodeCheckpoint } from '../model';
import { readSeedHarness } from '../domains/harnesses';
import { readReferenceHarness } from '../domains/reference-harnesses';
import { getDomain, type BuiltinDomainName } from '../domains/registry';
import { loadBasePolicy } from '../training/base-policy';
import { evaluateMeanAt8, runRsft, type EvalResult, type RsftRun } from '../training/headroom';

const REPORT_DIR = join(__dirname, '..', 'reports');

interface DomainReport {
  domain: string;
  basePolicySha256: string;
  testTasks: number;
  testTasksAvailable: number;
  baseH0: EvalResult;
  baseReference: EvalResult;
  rsft: { steps: number; lr: number; promptsPerStep: number; samplesPerPrompt: number; minibatchSize: number; runs: RsftRun[] } | null;
  measuredAt: string;
  command: string;
}

type BaseFile = Omit<DomainReport, 'rsft'>;
interface SeedFile {
  domain: string;
  basePolicySha256: string;
  testTasks: number;
  settings: { steps: number; lr: number; promptsPerStep: number; samplesPerPrompt: number; minibatchSize: number };
  run: RsftRun;
  command: string;
}

/** Merges the per-domain base files and per-seed RSFT files (written as each finishes) into reports. */
function collectReports(dir: string): DomainReport[] {
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  const out: DomainReport[] = [];
  for (const f of files.filter((x) => x.endsWith('-base.json'))) {
    const b = JSON.parse(readFileSync(join(dir, f), 'utf8')) as BaseFile;
    const seeds = files.filter((x) => x.startsWith(`${b.domain}-rsft-seed`)).map((x) => JSON.parse(readFileSync(join(dir, x), 'utf8')) as SeedFile)
      .filter((sf) => sf.basePolicySha256 === b.basePolicySha256);
    const first = seeds[0];
    out.push({ ...b, rsft: first ? { ...first.settings, runs: seeds.map((sf) => sf.run).sort((x, y) => x.seed - y.seed) } : null });
  }
  return out;
}

const pct = (x: number) => `${(100 * x).toFixed(1)}`;

function meanSe(xs: number[]): { mean: number; se: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (xs.length < 2) return { mean, se: NaN };
  const v = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1);
  return { mean, se: Math.sqrt(v / xs.length) };
}

function renderMarkdown(reports: DomainReport[]): string {
  const lines = [
    '# Headroom report',
    '',
    'mean@8 (%) on D_test: 8 samples per task, temperature 1.0, top-k 20, through the one agent loop. Base = the committed',
    'base policy (data/base-policies/<domain>.ckpt). RSFT under h0: per step 64 D_weight prompts x 8 samples at T = 1,',
    'top-k 20, keep reward > 0.5, one SFT epoch (training/rsft.ts runSftEpoch), fresh AdamW; the run seed drives prompts,',
    'samples, example order and the test samples. Gain = mean@8 after the last RSFT step minus mean@8 at step 0 of the',
    'same seed (same evaluation seed, so the pair shares its test sampling).',
    '',
    '| domain | test tasks | base h0 | base reference | reference - h0 | RSFT steps (lr) | RSFT h0 per seed: start -> end | mean gain +- s.e. |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of reports) {
    const runs = r.rsft?.runs ?? [];
    const gains = runs.map((run) => (run.evals[run.evals.length - 1]?.result.meanAt8 ?? NaN) - (run.evals[0]?.result.meanAt8 ?? NaN));
    const g = gains.length ? meanSe(gains) : null;
    const perSeed = runs.map((run) => `s${run.seed}: ${pct(run.evals[0].result.meanAt8)} -> ${pct(run.evals[run.evals.length - 1].result.meanAt8)}`).join('; ');
    lines.push(
      `| ${r.domain} | ${r.testTasks}/${r.testTasksAvailable} | ${pct(r.baseH0.meanAt8)} | ${pct(r.baseReference.meanAt8)} | ${(100 * (r.baseReference.meanAt8 - r.baseH0.meanAt8)).toFixed(1)} | ` +
        `${r.rsft ? `${r.rsft.steps} (${r.rsft.lr})` : 'not run'} | ${perSeed || '-'} | ${g ? `${(100 * g.mean).toFixed(1)} +- ${Number.isNaN(g.se) ? 'n/a' : (100 * g.se).toFixed(1)}` : '-'} |`,
    );
  }
  lines.push('', '## Details', '');
  for (const r of reports) {
    lines.push(`### ${r.domain}`, '', `Base policy sha256 \`${r.basePolicySha256}\`; measured ${r.measuredAt} by \`${r.command}\`.`, '');
    lines.push('| evaluation | mean@8 | pass@8 | tool-call rate | accuracy when a tool was called | answer rate | seconds |', '|---|---|---|---|---|---|---|');
    const row = (name: string, e: EvalResult) => lines.push(`| ${name} | ${pct(e.meanAt8)} | ${pct(e.passAt8)} | ${pct(e.toolRate)} | ${e.toolAccuracy === null ? '-' : pct(e.toolAccuracy)} | ${pct(e.answerRate)} | ${e.seconds.toFixed(0)} |`);
    row('base, h0', r.baseH0);
    row('base, reference harness', r.baseReference);
    for (const run of r.rsft?.runs ?? []) for (const e of run.evals) row(`RSFT seed ${run.seed}, step ${e.step}, h0`, e.result);
    for (const run of r.rsft?.runs ?? []) {
      lines.push('', `RSFT seed ${run.seed}, per step (train reward, accepted, distinct prompts, loss, seconds): ` + run.steps.map((s) => `${s.step}: ${s.meanReward.toFixed(3)}/${s.accepted}/${s.distinctPrompts}/${s.loss?.toFixed(3) ?? '-'}/${s.seconds.toFixed(0)}s`).join(', '));
    }
    lines.push('');
  }
  return lines.join('\n') + '\n';
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      domains: { type: 'string', default: 'math,search-qa,chess' },
      seeds: { type: 'string', default: '1,2,3' },
      'rsft-steps': { type: 'string', default: '30' },
      'eval-every': { type: 'string', default: '10' },
      'test-tasks': { type: 'string', default: '256' },
      lr: { type: 'string', default: '1e-4' },
      'render-only': { type: 'boolean', default: false },
      'skip-base': { type: 'boolean', default: false },
    },
  });
  const runsDir = join(REPORT_DIR, 'headroom-runs');
  mkdirSync(runsDir, { recursive: true });
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const command = `node --import tsx scripts/headroom-report.ts ${process.argv.slice(2).join(' ')}`;
  if (!values['render-only']) {
    for (const domain of values.domains.split(',') as BuiltinDomainName[]) {
      const instance = getDomain(domain).load({ kind: 'synthetic' });
      const { bytes, manifest } = loadBasePolicy(domain);
      const base = decodeCheckpoint(bytes);
      const tasks = instance.splits.test.slice(0, Number(values['test-tasks']));
      const h0 = readSeedHarness(domain);
      log(`[headroom] ${domain}: base ${manifest.sha256.slice(0, 12)}, ${tasks.length} of ${instance.splits.test.length} test tasks`);
      if (!values['skip-base']) {
        const baseH0 = await evaluateMeanAt8(base, instance, h0, tasks, 1);
        log(`[headroom] ${domain}: base under h0 mean@8 ${pct(baseH0.meanAt8)}% (tool ${pct(baseH0.toolRate)}%, ${baseH0.seconds.toFixed(0)}s)`);
        const baseReference = await evaluateMeanAt8(base, instance, readReferenceHarness(domain), tasks, 1);
        log(`[headroom] ${domain}: base under the reference harness mean@8 ${pct(baseReference.meanAt8)}% (tool ${pct(baseReference.toolRate)}%)`);
        const b: BaseFile = { domain, basePolicySha256: manifest.sha256, testTasks: tasks.length, testTasksAvailable: instance.splits.test.length, baseH0, baseReference, measuredAt: new Date().toISOString(), command };
        writeFileSync(join(runsDir, `${domain}-base.json`), JSON.stringify(b, null, 1) + '\n');
      }
      const steps = Number(values['rsft-steps']);
      const lr = Number(values.lr);
      if (steps > 0) {
        for (const seed of values.seeds.split(',').map(Number)) {
          const run = await runRsft(base, instance, h0, tasks, {
            seed, steps, promptsPerStep: 64, samplesPerPrompt: 8, acceptThreshold: 0.5, minibatchSize: 64, evalEvery: Number(values['eval-every']),
            hyper: { lr, weightDecay: 0, clipNorm: 1, beta1: 0.9, beta2: 0.95, eps: 1e-8 }, onLog: log,
          });
          const f: SeedFile = { domain, basePolicySha256: manifest.sha256, testTasks: tasks.length, settings: { steps, lr, promptsPerStep: 64, samplesPerPrompt: 8, minibatchSize: 64 }, run, command };
          writeFileSync(join(runsDir, `${domain}-rsft-seed${seed}.json`), JSON.stringify(f, null, 1) + '\n');
        }
      }
    }
  }
  const all = collectReports(runsDir);
  writeFileSync(join(REPORT_DIR, 'headroom.json'), JSON.stringify(all, null, 1) + '\n');
  const order = ['math', 'search-qa', 'chess'];
  const md = renderMarkdown(all.sort((a, b) => order.indexOf(a.domain) - order.indexOf(b.domain)));
  // Hand-written observations (e.g. longer runs recorded only in a log) go after the generated tables.
  const notesPath = join(REPORT_DIR, 'headroom-notes.md');
  const full = existsSync(notesPath) ? `${md}\n${readFileSync(notesPath, 'utf8')}` : md;
  writeFileSync(join(REPORT_DIR, 'headroom.md'), full);
  process.stdout.write(full);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
