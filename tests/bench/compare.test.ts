// `whale bench compare` end to end with real processes: a dev server of its own, the CLI as a subprocess that
// starts the real workers itself, a tiny comparison (math, weights-only and harness-only, one seed, tiny
// sizes). One run is started before the first invocation (as a killed invocation leaves it): the bench must
// follow it, not start a duplicate. A second invocation (in process, to save a CLI start) must skip every
// finished run, from the results folder or, when a run's cached result is gone, from the server, and start
// nothing, not even workers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startFaultCluster, type FaultCluster } from '../../testbed/fault-cluster';
import { ROOT } from '../workflows/env';
import { aggregate, markdownTable, planRuns, runCompare, type RunResult } from '../../bench/compare';
import { compareOptions } from '../../cli/bench-command';

let cluster: FaultCluster;
let out: string;
let env: NodeJS.ProcessEnv;
const ARGS = ['bench', 'compare', '--domains', 'math', '--seeds', '1', '--methods', 'weights-only,harness-only', '--budget', '8', '--sizes', 'tiny'];

before(async () => {
  cluster = await startFaultCluster();
  out = mkdtempSync(path.join(tmpdir(), 'whale-bench-'));
  const c = cluster.config;
  env = {
    ...process.env, WHALE_TEMPORAL_ADDRESS: c.address, WHALE_DEV_PORT: String(c.devServer.port), WHALE_DEV_UI_PORT: String(c.devServer.uiPort),
    WHALE_DEV_DATA_DIR: c.devServer.dataDir, WHALE_ARTIFACT_DIR: c.artifactDir, WHALE_MODEL_THREADS: '1',
  };
});
after(async () => {
  await cluster?.teardown();
  if (out) rmSync(out, { recursive: true, force: true });
});

function whale(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

async function executions(workflowId: string): Promise<number> {
  let n = 0;
  for await (const _ of cluster.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) n++;
  return n;
}

describe('whale bench compare', () => {
  it('runs a tiny comparison with the real workers, following a run a previous invocation left running', async (t) => {
    const planned = planRuns({ domains: ['math'], seeds: [0], methods: ['weights-only', 'harness-only'], budget: 8, sizes: 'tiny' }, cluster.config);
    assert.equal(planned.length, 2);
    // As a killed invocation leaves it: started, no worker yet.
    await cluster.client.workflow.start('whaleRun', { taskQueue: cluster.config.taskQueues.orchestration, workflowId: planned[1].workflowId, args: [planned[1].input] });

    const r = await whale([...ARGS, '--out', out]);
    t.diagnostic(r.stderr.split('\n').filter((l) => l.startsWith('[bench]')).join('\n'));
    assert.equal(r.code, 0, `bench compare failed:\n${r.stderr}`);
    assert.match(r.stderr, new RegExp(`follow ${planned[1].workflowId}: already running`));
    assert.match(r.stderr, new RegExp(`start ${planned[0].workflowId}`));
    for (const p of planned) assert.equal(await executions(p.workflowId), 1, `${p.workflowId} must have run exactly once`);

    const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as { runs: RunResult[]; missing: string[]; invocations: { command: string; date: string; finishedAt: string | null; lastRunAt: string | null }[] };
    assert.deepEqual(results.missing, []);
    assert.deepEqual(results.runs.map((x) => x.method), ['weights-only', 'harness-only']);
    const [wo, ho] = results.runs;
    assert.equal(wo.weightSteps, 1);
    assert.equal(wo.rolloutsUsed, 8, 'weights-only: one step of 4 prompts x 2 samples');
    assert.equal(ho.weightSteps, 0);
    assert.equal(ho.proposalRounds, 1);
    assert.ok(ho.rolloutsUsed >= 8, `harness-only spends its budget on search: ${ho.rolloutsUsed}`);
    for (const run of results.runs) {
      assert.ok(run.curve[0]?.label === 'initial' && run.curve[0].rollouts === 0, `${run.method}: the test curve starts at the initial evaluation: ${JSON.stringify(run.curve)}`);
      assert.equal(run.curve[run.curve.length - 1].rollouts, run.rolloutsUsed, `${run.method}: the curve reaches the final rollout count`);
      assert.equal(run.curve[run.curve.length - 1].meanAt8, run.finalMeanAt8);
      assert.ok(run.wallSeconds > 0 && run.activitySeconds > 0 && run.activitySeconds <= run.wallSeconds);
    }
    assert.equal(results.invocations.length, 1);
    assert.match(results.invocations[0].command, /^whale bench compare --domains math .*--budget 8 --sizes tiny --out /);
    assert.ok(!Number.isNaN(Date.parse(results.invocations[0].date)));
    // When it last saw a run finish: what a stopped invocation's wall time counts to.
    const { date, lastRunAt, finishedAt } = results.invocations[0];
    assert.ok(lastRunAt !== null && Date.parse(date) < Date.parse(lastRunAt) && Date.parse(lastRunAt) <= Date.parse(finishedAt!), JSON.stringify(results.invocations[0]));

    const md = readFileSync(path.join(out, 'results.md'), 'utf8');
    const expected = markdownTable(aggregate(results.runs, ['weights-only', 'harness-only'], ['math']).rows, { math: wo.bestMeanAt8 });
    assert.ok(md.includes(expected), `results.md must hold the table computed from results.json:\n${md}`);
    const row = (m: string) => md.split('\n').find((l) => l.startsWith(`| ${m} |`));
    // Protocol none (the tiny sizes'), final mean@8 before best, the weights-only run within its 8-rollout cap.
    assert.match(row('weights-only') ?? '', new RegExp(`^\\| weights-only \\| none \\| 1 \\| ${wo.finalMeanAt8!.toFixed(4)} ± 0\\.0000 \\| ${wo.bestMeanAt8!.toFixed(4)} ± 0\\.0000 \\| 8 ± 0 \\| 1/1 runs \\| \\d+ ± 0 \\(1/1 seeds\\) \\|`));
    assert.ok(row('harness-only'), md);
    // Each run's line: protocol and budget use, recorded by the run itself.
    assert.deepEqual(results.runs.map((x) => [x.budget?.protocol, x.budget?.spentRollouts]), [['none', 8], ['none', ho.rolloutsUsed]]);
    assert.ok(md.includes(`| weights-only | 0 | none | ${wo.finalMeanAt8!.toFixed(4)} | ${wo.bestMeanAt8!.toFixed(4)} | 8 / 8 | 0 | yes | - |`), md);
    const svg = readFileSync(path.join(out, 'test-mean-at-8-math.svg'), 'utf8');
    assert.match(svg, /^<svg/);
    assert.match(svg, /weights-only/);
  });

  it('skips finished runs on a second invocation (from the results folder, or from the server) and starts nothing', async () => {
    const opts = { domains: ['math'], seeds: [0], methods: ['weights-only', 'harness-only'], budget: 8, sizes: 'tiny' as const };
    const planned = planRuns(opts, cluster.config);
    const cache = path.join(out, 'runs', `${planned[0].workflowId}.json`);
    assert.ok(existsSync(cache));
    const before = readFileSync(cache, 'utf8');
    rmSync(cache);
    const lines: string[] = [];
    const outcome = await runCompare({ ...opts, out, parallel: 1, workers: 'auto', plan: false }, cluster.config, 'whale bench compare (second invocation)', (l) => lines.push(l));
    assert.deepEqual(outcome.counts, { skipped: 2, started: 0, attached: 0, failed: 0 });
    assert.ok(lines.includes(`skip  ${planned[0].workflowId}: finished (server)`), lines.join('\n'));
    assert.ok(lines.includes(`skip  ${planned[1].workflowId}: finished (results folder)`), lines.join('\n'));
    assert.ok(!lines.some((l) => l.startsWith('started workers')), 'nothing to run: no workers are started');
    assert.deepEqual(JSON.parse(readFileSync(cache, 'utf8')), JSON.parse(before), 'the result read back from the server equals the cached one');
    for (const p of planned) assert.equal(await executions(p.workflowId), 1);
    const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as { invocations: { command: string; finishedAt: string | null }[]; runs: unknown[] };
    assert.deepEqual(results.invocations.map((i) => i.command.slice(0, 20)), ['whale bench compare ', 'whale bench compare ']);
    assert.ok(results.invocations.every((i) => i.finishedAt !== null));
    assert.equal(results.runs.length, 2);

    // An invocation for a part of the comparison (one method) keeps the report whole: results.md and
    // results.json still cover both methods, found from the folder's runs and its earlier plan.
    const part: string[] = [];
    const partOutcome = await runCompare({ ...opts, methods: ['harness-only'], out, parallel: 1, workers: 'auto', plan: false }, cluster.config, 'whale bench compare (one method)', (l) => part.push(l));
    assert.deepEqual(partOutcome.counts, { skipped: 1, started: 0, attached: 0, failed: 0 });
    assert.ok(part.some((l) => /^results\.md covers the folder's comparison: 2 planned runs \(math; 2 methods; seeds 0\), 1 of them finished by earlier invocations/.test(l)), part.join('\n'));
    const whole = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as { methods: string[]; runs: { method: string }[]; missing: string[] };
    assert.deepEqual(whole.methods, ['weights-only', 'harness-only']);
    assert.deepEqual(whole.runs.map((r) => r.method), ['weights-only', 'harness-only']);
    assert.deepEqual(whole.missing, []);
    assert.match(readFileSync(path.join(out, 'results.md'), 'utf8'), /\| weights-only \| none \| 1 \|[\s\S]*\| harness-only \| none \| 1 \|/);

    // --report rewrites the report from the folder alone (no server, nothing run, no invocation recorded);
    // a budget no run in the folder was made with is refused, naming the fix.
    rmSync(path.join(out, 'results.md'));
    const rep = await whale(['bench', 'compare', '--report', '--sizes', 'tiny', '--budget', '8', '--out', out]);
    assert.equal(rep.code, 0, rep.stderr);
    assert.match(rep.stdout, /^bench compare --report: 2 of 2 planned runs finished; wrote .*results\.json, .*results\.md/);
    assert.match(rep.stderr, /report over 2 of 2 planned runs \(math; 2 methods; seeds 0\); nothing was run/);
    assert.doesNotMatch(rep.stderr, /start|follow|server/);
    assert.ok(existsSync(path.join(out, 'results.md')));
    const afterReport = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as { invocations: unknown[]; runs: unknown[] };
    assert.equal(afterReport.invocations.length, 3, 'a report is not an invocation of the comparison');
    assert.equal(afterReport.runs.length, 2);
    const wrong = await whale(['bench', 'compare', '--report', '--sizes', 'tiny', '--budget', '9', '--out', out]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /--report: .* holds no finished run of a comparison at --budget 9 --sizes tiny: give the budget and sizes its runs were made with/);

    // The same through the CLI with --json: one JSON document on stdout, the [bench] lines on stderr.
    const j = await whale([...ARGS, '--out', out, '--json']);
    assert.equal(j.code, 0, j.stderr);
    const doc = JSON.parse(j.stdout) as { out: string; plan: { workflowId: string; finished: boolean }[]; finished: number; counts: Record<string, number>; failures: string[]; written: string[]; results: { workflowId: string; bestMeanAt8: number | null }[] };
    assert.deepEqual(doc.plan.map((p) => [p.workflowId, p.finished]), planned.map((p) => [p.workflowId, true]));
    assert.deepEqual(doc.counts, { skipped: 2, started: 0, attached: 0, failed: 0 });
    assert.deepEqual(doc.failures, []);
    assert.ok(doc.written.some((f) => f === path.join(out, 'results.json')) && doc.written.every((f) => existsSync(f)), doc.written.join(', '));
    const runs = (JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as { runs: RunResult[] }).runs;
    assert.deepEqual(doc.results.map((r) => [r.workflowId, r.bestMeanAt8]), runs.map((r) => [r.workflowId, r.bestMeanAt8]));
    assert.match(j.stderr, /\[bench\] skip {2}bench-math-weights-only/);
  });

  it('rejects a bad method, seeds or sizes with the accepted forms', () => {
    const base = { domains: 'math', seeds: '3', methods: 'weights-only', budget: '8', sizes: 'tiny', out, parallel: '1', workers: 'auto' };
    assert.throws(() => compareOptions({ ...base, methods: 'whale-fixed:x' }), /unknown method 'whale-fixed:x'.*whale-fixed:E:I/);
    assert.throws(() => compareOptions({ ...base, seeds: '0' }), /--seeds 0 is a count of zero seeds: to run seed 0 alone write --seeds 0, /);
    assert.throws(() => compareOptions({ ...base, seeds: '-1' }), /--seeds must be a count .*one seed alone with a trailing comma: 5,/);
    assert.deepEqual([compareOptions({ ...base, seeds: '0,' }).seeds, compareOptions({ ...base, seeds: '5,' }).seeds, compareOptions({ ...base, seeds: '2' }).seeds], [[0], [5], [0, 1]]);
    assert.throws(() => compareOptions({ ...base, sizes: 'huge' }), /--sizes must be default or tiny/);
    assert.deepEqual(compareOptions({ ...base, seeds: '4,7' }).seeds, [4, 7]);
    assert.deepEqual(compareOptions(base).seeds, [0, 1, 2]);
  });
});
