// `whale namespace setup` and `--json` through the real CLI, on one fresh `temporal server start-dev` started
// WITHOUT the project's search attributes: a worker warns at start-up naming the command, the set-up adds
// every attribute and the retention (a repeat changes nothing, a new namespace is registered), a worker then
// starts quietly; runs on that namespace (scripted activities in this process) are started with `run --json`,
// stopped with `stop --wait --json` and audited with `audit --json`; `domain check --json` and
// `bench compare --plan --json` need no server. Each stdout is parsed as one JSON document.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTestWorker, ROOT, temporalBinary, testConfig, waitFor } from '../workflows/env';
import { gate, scriptedActivities } from '../workflows/scripted-activities';
import { runStatusQuery } from '../../workflows/whale-run-messages';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';

let env: TestWorkflowEnvironment;
let dir: string;
const NAMES = ALL_SEARCH_ATTRIBUTES.map((k) => k.name);
const QUEUE = 'whale-orchestration';

before(async () => {
  // No `searchAttributes`: the server knows none of the project's, as a cluster `whale dev` did not start.
  env = await TestWorkflowEnvironment.createLocal({ server: { executable: { type: 'existing-path', path: temporalBinary() }, log: { format: 'pretty', level: 'error' } } });
  dir = mkdtempSync(path.join(tmpdir(), 'whale-ns-json-'));
});
after(async () => {
  await env?.teardown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Result { code: number | null; stdout: string; stderr: string }

/** The CLI as a subprocess, asynchronously (a worker in this process must keep serving meanwhile). */
function whale(args: string[], extraEnv: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], {
      env: { ...process.env, WHALE_TEMPORAL_ADDRESS: env.address, WHALE_ARTIFACT_DIR: path.join(dir, 'artifacts'), ...extraEnv }, timeout: 240_000, cwd: dir,
    }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

/** Parses stdout as exactly one JSON document (nothing else may be printed there). */
function json<T = Record<string, unknown>>(r: Result, what: string): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch (err) {
    assert.fail(`${what}: stdout is not one JSON document (${(err as Error).message}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  }
}

/** Starts `whale worker --queue proposer`, returns its stderr once it polls, and stops it. */
async function workerStartOutput(): Promise<string> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), 'worker', '--queue', 'proposer', '--connect-timeout-ms', '0'], {
    env: { ...process.env, WHALE_TEMPORAL_ADDRESS: env.address }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  let gone = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => ((gone = true), resolve())));
  try {
    await waitFor('the worker to poll', async () => {
      if (/worker polling/.test(out)) return true;
      if (gone) assert.fail(`the worker exited before it polled:\n${out}`);
      return undefined;
    }, 120_000);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return out;
}

async function registered(): Promise<Record<string, unknown>> {
  return (await env.connection.operatorService.listSearchAttributes({ namespace: 'default' })).customAttributes ?? {};
}

describe('whale namespace setup', () => {
  it('on a fresh server: the worker warns, the set-up adds the attributes and retention once, then the worker is quiet', async () => {
    for (const name of NAMES) assert.equal((await registered())[name], undefined, `${name} is not pre-registered`);
    const before = await workerStartOutput();
    assert.match(before, /warning: namespace 'default' lacks search attributes WhalePhase \(KEYWORD\),.*WhaleTrainReward \(DOUBLE\).*`whale namespace setup`/);

    const first = await whale(['namespace', 'setup', '--json']);
    assert.equal(first.code, 0, first.stderr);
    const r1 = json<{ namespace: string; created: boolean; added: string[]; alreadyPresent: string[]; retention: { before: number; after: number; changed: boolean } }>(first, 'namespace setup --json');
    assert.equal(r1.namespace, 'default');
    assert.equal(r1.created, false);
    assert.deepEqual(r1.added, NAMES);
    assert.deepEqual(r1.alreadyPresent, []);
    assert.deepEqual(r1.retention, { before: 24 * 3600, after: 720 * 3600, changed: true });
    const types = await registered();
    for (const k of ALL_SEARCH_ATTRIBUTES) assert.ok(types[k.name] !== undefined, `${k.name} registered`);
    const d = await env.connection.workflowService.describeNamespace({ namespace: 'default' });
    assert.equal(Number(d.config?.workflowExecutionRetentionTtl?.seconds), 720 * 3600);

    const again = json<typeof r1>(await whale(['namespace', 'setup', '--json']), 'second namespace setup');
    assert.deepEqual(again.added, []);
    assert.deepEqual(again.alreadyPresent, NAMES);
    assert.equal(again.retention.changed, false);

    const text = await whale(['namespace', 'setup', '--retention', '48h']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /none added; 10 already present\n {2}retention: 720h -> 48h/);

    const after = await workerStartOutput();
    assert.doesNotMatch(after, /lacks search attributes|could not list/, after);
  });

  it('registers a namespace that does not exist, and refuses a bad retention with exit 2', async () => {
    const fresh = await whale(['namespace', 'setup', '--json'], { WHALE_TEMPORAL_NAMESPACE: 'whale-fresh' });
    assert.equal(fresh.code, 0, fresh.stderr);
    const r = json<{ created: boolean; added: string[] }>(fresh, 'setup of a new namespace');
    assert.equal(r.created, true);
    assert.deepEqual(r.added, NAMES);
    const bad = await whale(['namespace', 'setup', '--retention', 'soon']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /invalid retention "soon": use a number and a unit, e.g. 72h or 30d/);
    assert.equal(bad.stdout, '');
  });
});

describe('--json', () => {
  it('run, stop --wait and audit print one JSON document each (progress on stderr)', async () => {
    const release = gate();
    const s = scriptedActivities({
      splitSizes: { weight: 100, harness: 4, test: 4 }, rewards: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], testScores: [0.1, 0.3, 0.2, 0.4], candidateScores: {},
      // Only the second run reaches step 2: it is held there until its stop request has arrived.
      onRolloutBatch: async (step) => (step === 2 ? release.wait() : undefined),
    });
    writeFileSync(path.join(dir, 'run.json'), JSON.stringify(testConfig(QUEUE, { method: 'weights-only', budget: { totalWeightSteps: 1 } })));
    writeFileSync(path.join(dir, 'long.json'), JSON.stringify(testConfig(QUEUE, { method: 'weights-only', budget: { totalWeightSteps: 6 } })));
    const worker = await createTestWorker(env, QUEUE, s.activities);
    await worker.runUntil(async () => {
      const run = await whale(['run', 'run.json', '--id', 'json-run', '--json']);
      assert.equal(run.code, 0, run.stderr);
      const r = json<{ workflowId: string; summary: { weightStepsDone: number; finalMeanAt8: number } }>(run, 'run --json');
      assert.equal(r.workflowId, 'json-run');
      assert.equal(r.summary.weightStepsDone, 1);
      assert.match(run.stderr, /run json-run started/);

      const started = await whale(['start', 'long.json', '--id', 'json-stop']);
      assert.equal(started.code, 0, started.stderr);
      await release.reached;
      const stop = whale(['stop', 'json-stop', '--wait', '--json', '--timeout', '3m']);
      const handle = env.client.workflow.getHandle('json-stop');
      await waitFor('the stop request to reach the run', async () => ((await handle.query(runStatusQuery))?.control.stop === 'finish-step' ? true : undefined), 120_000);
      release.open();
      const stopped = await stop;
      assert.equal(stopped.code, 0, stopped.stderr);
      const st = json<{ workflowId: string; runId: string; mode: string; summary: { stoppedEarly: boolean; weightStepsDone: number } }>(stopped, 'stop --wait --json');
      assert.equal(st.workflowId, 'json-stop');
      assert.equal(st.mode, 'finish-step');
      assert.ok(st.runId);
      assert.equal(st.summary.stoppedEarly, true);
      assert.equal(st.summary.weightStepsDone, 2);
    });

    const audit = await whale(['audit', 'json-run', '--out', path.join(dir, 'audit'), '--json']);
    assert.equal(audit.code, 0, audit.stderr);
    const a = json<{ workflowId: string; status: string; files: string[]; mismatches: number; phases: { kind: string; matches: boolean | null; rule: string }[] }>(audit, 'audit --json');
    assert.equal(a.workflowId, 'json-run');
    assert.equal(a.status, 'completed');
    assert.equal(a.mismatches, 0);
    assert.ok(a.phases.length >= 1 && a.phases.every((p) => p.matches !== false && typeof p.rule === 'string'));
    for (const f of a.files) assert.ok(existsSync(f), `${f} written`);
    assert.ok(a.files.some((f) => f.endsWith('index.html')));
  });

  it('domain check and bench compare --plan (no server needed)', async () => {
    const check = await whale(['domain', 'check', path.join(ROOT, 'examples', 'pairs-domain'), '--json']);
    assert.equal(check.code, 0, check.stderr);
    const c = json<{ name: string; sha256: string; splits: { weight: number; harness: number; test: number }; seedHarness: { loads: boolean; name: string } }>(check, 'domain check --json');
    assert.match(c.sha256, /^[0-9a-f]{64}$/);
    assert.deepEqual(c.splits, { weight: 2444, harness: 128, test: 128 });
    assert.deepEqual([c.seedHarness.loads, c.seedHarness.name], [true, 'pairs-h0']);

    const plan = await whale(['bench', 'compare', '--domains', 'math', '--seeds', '2', '--methods', 'weights-only,harness-only', '--sizes', 'tiny', '--budget', '8', '--out', path.join(dir, 'bench'), '--plan', '--json']);
    assert.equal(plan.code, 0, plan.stderr);
    const p = json<{ plan: { workflowId: string; seed: number; method: string; finished: boolean }[]; finished: number; counts: Record<string, number> }>(plan, 'bench compare --plan --json');
    assert.equal(p.plan.length, 4);
    assert.deepEqual(p.plan.map((x) => [x.seed, x.method, x.finished]), [[0, 'weights-only', false], [0, 'harness-only', false], [1, 'weights-only', false], [1, 'harness-only', false]]);
    assert.ok(p.plan.every((x) => x.workflowId.startsWith('bench-math-')));
    assert.equal(p.finished, 0);
    assert.match(plan.stderr, /\[bench\] 4 runs, 0 finished/);
  });
});
