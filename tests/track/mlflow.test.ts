// Metrics end to end: a real WHALE installation (`whale dev --headless`: dev server + three worker processes,
// two of them serving the SDK's Prometheus metrics through the per-kind variables) runs a tiny run; the
// test scrapes the workers' /metrics, follows the run with `whale track --follow` into a real `mlflow server`
// (SQLite store, artifact proxy), reads every metric back through MLflow's REST API and compares it with the run's
// status query and history, exports again (nothing duplicated, the history unchanged) and screenshots the
// MLflow run page in headless Chromium (kept in .data/test-artifacts/tracking/; the committed copy in
// reports/tracking/ is refreshed with WHALE_REFRESH_REPORTS=1).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium } from 'playwright-core';
import { freePort, ROOT, waitFor } from '../workflows/env';
import { ok, startProductCluster, type ProductCluster } from '../product/cluster';
import { buildTimeline, fetchHistories } from '../../audit/timeline';
import { METRIC_KEYS } from '../../track/run-metrics';
import { MlflowExporter } from '../../track/mlflow';
import type { RunState } from '../../workflows/run-state';

const MLFLOW = path.join(ROOT, '.tools', 'mlflow-venv', 'bin', 'mlflow');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SKIP = existsSync(MLFLOW) ? false : 'the MLflow environment .tools/mlflow-venv is absent (run `bash scripts/setup-mlflow.sh`)';
if (SKIP) process.stdout.write(`# skipped tests/track/mlflow.test.ts: ${SKIP}\n`);

const work = mkdtempSync(path.join(tmpdir(), 'whale-track-'));
let mlflow: ChildProcess | null = null;
let mlflowOut = '';
let mlflowUri = '';
let cluster: ProductCluster | null = null;
const metricsPorts = { orchestration: 0, model: 0 };

before(async () => {
  if (SKIP) return;
  // A free port can be taken by a test running beside this one during mlflow's ~10 s start-up: then start again
  // on another (at most 3 tries), as the bind error says.
  let tries = 0;
  const startMlflow = async (): Promise<void> => {
    tries++;
    const port = await freePort();
    mlflowUri = `http://127.0.0.1:${port}`;
    mlflowOut = '';
    mlflow = spawn(MLFLOW, ['server', '--host', '127.0.0.1', '--port', String(port), '--workers', '1',
      '--backend-store-uri', `sqlite:///${path.join(work, 'mlflow.db')}`, '--artifacts-destination', path.join(work, 'mlflow-artifacts')],
    // No background job runner (a dozen worker processes for GenAI jobs this test does not use).
    { cwd: work, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MLFLOW_SERVER_ENABLE_JOB_EXECUTION: 'false' } });
    mlflow.stdout?.on('data', (d: Buffer) => (mlflowOut += d.toString()));
    mlflow.stderr?.on('data', (d: Buffer) => (mlflowOut += d.toString()));
  };
  await startMlflow();
  metricsPorts.orchestration = await freePort();
  metricsPorts.model = await freePort();
  // The per-kind variables: the three workers `whale dev` starts share one environment.
  process.env.WHALE_METRICS_ADDRESS_ORCHESTRATION = `127.0.0.1:${metricsPorts.orchestration}`;
  process.env.WHALE_METRICS_ADDRESS_MODEL = `127.0.0.1:${metricsPorts.model}`;
  cluster = await startProductCluster('track');
  await waitFor('mlflow server /health', async () => {
    if (mlflow?.exitCode !== null) {
      if (/address already in use/.test(mlflowOut) && tries < 3) { await startMlflow(); return undefined; }
      throw new Error(`mlflow server exited:\n${mlflowOut}`);
    }
    const r = await fetch(`${mlflowUri}/health`).catch(() => null);
    return r?.ok ? true : undefined;
  }, 300_000);
});

after(async () => {
  await cluster?.teardown();
  if (mlflow && mlflow.exitCode === null) {
    const exited = new Promise<void>((r) => mlflow!.once('exit', () => r()));
    mlflow.kill('SIGTERM');
    await exited;
  }
  rmSync(work, { recursive: true, force: true });
});

async function scrape(port: number): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(r.status, 200);
  return r.text();
}

async function mlflowApi<T>(api: string, query: Record<string, string>): Promise<T> {
  const r = await fetch(`${mlflowUri}${api}?${new URLSearchParams(query)}`);
  assert.equal(r.status, 200, `${api}: ${await r.clone().text()}`);
  return r.json() as Promise<T>;
}

/** `whale <args>` against the cluster without blocking the test (its output collected); killed after `timeoutMs`. */
function whaleAsync(c: ProductCluster, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], { cwd: c.dir, env: c.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const guard = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => child.once('exit', (code) => {
    clearTimeout(guard);
    resolve({ code, stdout, stderr });
  }));
}

describe('whale track to MLflow, and the workers\' Prometheus endpoints', () => {
  it('scrapes the workers, exports a real run, reads its metrics back equal to its status and history, and re-exports without duplicates', { skip: SKIP }, async (t) => {
    const c = cluster!;
    // Both endpoints answer with the SDK's worker metrics, labelled with the worker kind.
    for (const kind of ['orchestration', 'model'] as const) {
      const text = await waitFor(`${kind} worker metrics`, async () => {
        const body = await scrape(metricsPorts[kind]);
        return body.includes('temporal_worker_task_slots_available') ? body : undefined;
      }, 120_000);
      assert.match(text, new RegExp(`temporal_worker_task_slots_available\\{[^}]*whale_worker="${kind}"`));
    }
    assert.match(c.output(), new RegExp(`model worker metrics \\(Prometheus\\) at http://127\\.0\\.0\\.1:${metricsPorts.model}/metrics \\(from WHALE_METRICS_ADDRESS_MODEL\\)`));

    // A tiny real run: two weight steps around one harness phase, a test evaluation before and after (on two
    // tasks: what is checked is the export, not the scores). Four prompts a step, so that both steps change the
    // weights: an evaluation of an unchanged checkpoint is reused, not run (tests/workflows/test-grid.test.ts
    // checks that such an evaluation is exported from the run's result).
    writeFileSync(path.join(c.dir, 'run.json'), JSON.stringify({
      version: 1, method: 'whale-fixed', domain: 'math', seed: 5,
      weight: { promptsPerStep: 4, samplesPerPrompt: 2, minibatchSize: 8 },
      switching: { kind: 'fixed', weightEpochs: 0.001, harnessRounds: 2 },
      harness: { candidatesPerRound: 1, taskLimit: 2 },
      budget: { totalWeightSteps: 2 },
      test: { everyEpochs: 1, samplesPerTask: 2, taskLimit: 2 },
    }));
    const t0 = Date.now();
    ok(c.whale(['start', 'run.json', '--id', 'track-1']), 'whale start', c);
    // Followed from its start: each pass logs only the points MLflow does not hold; it ends with the run. (Every
    // pass exports the whole run again, report included: a pass every 10 s rather than 3 s keeps it a few passes.)
    const reportDir = path.join(work, 'report');
    const follow = await whaleAsync(c, ['track', 'track-1', '--mlflow-uri', mlflowUri, '--follow', '--interval-s', '10', '--json', '--report-dir', reportDir], 900_000);
    assert.equal(follow.code, 0, `whale track --follow:\n${follow.stdout}\n${follow.stderr}\n${c.output().slice(-3000)}`);
    const passes = follow.stderr.match(/\) -> MLflow at /g)?.length ?? 0;
    t.diagnostic(`run took ${((Date.now() - t0) / 1000).toFixed(0)} s; whale track --follow exported it in ${passes} passes`);
    assert.match(follow.stderr, /\[whale\] track-1 \(running\) -> MLflow at .*: created run/, 'the first pass saw the run running');
    assert.ok(passes >= 2, follow.stderr);
    // The model worker executed activities, so their latency histogram is there now.
    assert.match(await scrape(metricsPorts.model), /temporal_activity_execution_latency_bucket\{[^}]*activity_type="rolloutBatch"/);

    const client = new Client({ connection: await Connection.connect({ address: c.env.WHALE_TEMPORAL_ADDRESS! }) });
    const eventsBefore = (await fetchHistories(client, 'track-1')).reduce((n, h) => n + (h.events?.length ?? 0), 0);
    const status = await client.workflow.getHandle('track-1').query<RunState | null>('status');
    assert.ok(status && status.tests.evaluations.length >= 2, `the run has test evaluations: ${JSON.stringify(status?.tests)}`);
    const timeline = buildTimeline('track-1', await fetchHistories(client, 'track-1'));
    assert.equal(timeline.steps.length, 2);

    const first = JSON.parse(follow.stdout) as { trackerRunId: string; url: string; created: boolean; metricsLogged: number; metricsAlreadyThere: number; artifactsUploaded: number; status: string };
    assert.equal(first.status, 'finished');
    assert.ok(first.artifactsUploaded >= 3, `uploaded ${first.artifactsUploaded} report files`);

    // Read back through the REST API.
    const exporter = new MlflowExporter(mlflowUri);
    const run = await mlflowApi<{ run: { info: { status: string; run_name: string }; data: { params: { key: string; value: string }[]; tags: { key: string; value: string }[] } } }>('/api/2.0/mlflow/runs/get', { run_id: first.trackerRunId });
    assert.equal(run.run.info.status, 'FINISHED');
    assert.equal(run.run.info.run_name, 'track-1');
    const params = Object.fromEntries(run.run.data.params.map((p) => [p.key, p.value]));
    assert.equal(params.method, 'whale-fixed');
    assert.equal(params['weight.promptsPerStep'], '4');
    assert.equal(params['budget.totalWeightSteps'], '2');
    const tags = Object.fromEntries(run.run.data.tags.map((p) => [p.key, p.value]));
    assert.equal(tags['whale.workflow_id'], 'track-1');
    assert.equal(tags['whale.phase'], 'done');

    const history = async (key: string) => exporter.metricHistory(first.trackerRunId, key);
    const tests = await history(METRIC_KEYS.testMeanAt8);
    assert.deepEqual(tests.map((m) => [m.step, m.value]), status.tests.evaluations.map((e) => [e.atRollouts, e.meanAt8]), 'test mean@8 equals the status query');
    const rewards = await history(METRIC_KEYS.reward);
    assert.deepEqual(rewards.map((m) => [m.step, m.value]), timeline.steps.map((s) => [s.step, s.meanReward]));
    assert.deepEqual((await history(METRIC_KEYS.accepted)).map((m) => m.value), timeline.steps.map((s) => s.accepted));
    assert.deepEqual((await history(METRIC_KEYS.rolloutsSpent)).map((m) => m.value), timeline.steps.map((s) => s.atRollouts));
    const stepRollouts = (await history(METRIC_KEYS.stepRollouts)).map((m) => m.value);
    assert.equal(stepRollouts.reduce((a, b) => a + b, 0), status.ledger.training, 'the steps\' rollouts add up to the ledger\'s training rollouts');
    assert.deepEqual((await history(METRIC_KEYS.loss)).map((m) => m.value), timeline.steps.filter((s) => s.fineTune?.meanLoss != null).map((s) => s.fineTune!.meanLoss));
    // Logged while the run went on (before any phase record existed), and equal to the recorded phases.
    assert.deepEqual((await history(METRIC_KEYS.cycle)).map((m) => m.value), timeline.steps.map((s) => timeline.recordedPhases.find((p) => p.kind === 'weight' && s.step > p.startStep && s.step <= p.endStep)?.cycle));
    assert.deepEqual((await history(METRIC_KEYS.cycle)).map((m) => m.value), [1, 2], 'step 1 in cycle 1, step 2 in cycle 2 (after harness phase 1)');

    const listed = await mlflowApi<{ files?: { path: string }[] }>('/api/2.0/mlflow/artifacts/list', { run_id: first.trackerRunId, path: 'audit' });
    assert.ok(listed.files?.some((f) => f.path === 'audit/summary.md'), JSON.stringify(listed));

    // Again: the same MLflow run, nothing new, and the workflow history did not change.
    const again = JSON.parse(ok(c.whale(['track', 'track-1', '--mlflow-uri', mlflowUri, '--json']), 'whale track (again)', c)) as { trackerRunId: string; created: boolean; metricsLogged: number; metricsAlreadyThere: number };
    assert.equal(again.trackerRunId, first.trackerRunId);
    assert.equal(again.created, false);
    assert.equal(again.metricsLogged, 0);
    assert.equal(again.metricsAlreadyThere, first.metricsLogged + first.metricsAlreadyThere);
    assert.equal((await history(METRIC_KEYS.testMeanAt8)).length, status.tests.evaluations.length);
    assert.equal((await fetchHistories(client, 'track-1')).reduce((n, h) => n + (h.events?.length ?? 0), 0), eventsBefore, 'tracking does not touch the workflow history');
    await client.connection.close();

    // The run page in the MLflow UI, kept as the test's artifact.
    assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: scripts/test.sh installs Debian's chromium (or set CHROMIUM_PATH)`);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
      await page.goto(first.url);
      await page.getByText('track-1').first().waitFor({ timeout: 120_000 });
      await page.getByText(METRIC_KEYS.testMeanAt8).first().waitFor({ timeout: 60_000 });
      const shot = path.join(work, 'mlflow-run.png');
      await page.screenshot({ path: shot, fullPage: true });
      assert.ok(statSync(shot).size > 20_000, 'the screenshot is not blank');
      // Kept as the test's artifact under .data/ (ignored), so a suite run leaves the tree clean; set
      // WHALE_REFRESH_REPORTS=1 to refresh the committed copy in reports/tracking/.
      const keptRel = process.env.WHALE_REFRESH_REPORTS === '1' ? path.join('reports', 'tracking') : path.join('.data', 'test-artifacts', 'tracking');
      const kept = path.join(ROOT, keptRel);
      mkdirSync(kept, { recursive: true });
      copyFileSync(shot, path.join(kept, 'mlflow-run.png'));
      t.diagnostic(`screenshot: ${path.join(keptRel, 'mlflow-run.png')} (${first.url})`);
    } finally {
      await browser.close();
    }
  });
});
