// End to end on a Hugging Face model: a tiny random Qwen2 folder made in the test becomes a checkpoint
// pointer (`whale import --pointer`), and a WHALE fixed run (weight, harness, weight phase) on a real dev
// server and real worker processes rolls out through a real `transformers serve` and trains through the
// reference trainer (trainers/hf) as a command. Checked: every step's checkpoint is a new folder; the dataset
// is the accepted trajectories' kept calls and the loss covers only their assistant tokens (recomputed here
// from the dataset the trainer received); the model worker, SIGKILLed while the trainer runs, is replaced
// and the run completes; `whale audit` explains every phase from the recorded decisions and names the
// weights' folders; `whale status`, `whale gc` and `whale agent export` handle the pointer run; and a second
// run started from that agent bundle (`whale start --from <bundle>`) serves and trains the bundle's hf/ folder.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startScaleCluster, activityResults, type ScaleCluster } from '../../testbed/scale-cluster';
import { ROOT, freePort, waitFor } from '../workflows/env';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { readCheckpointPointer } from '../../backends/checkpoint-pointer';
import { trajectoriesFromJsonl } from '../../agent/trajectory';
import { formatDomainRef, hashDomainFolder } from '../../domains/external';
import { renderChatPrompt } from '../../model';
import { BundleManifestSchema } from '../../cli/agent-bundle';
import type { ArtifactRef } from '../../store/artifact-ref';
import type { RunSummary } from '../../workflows/run-state';
import type { FineTuneStepResult, RolloutBatchResult } from '../../activities/types';
import type { DatasetRecord, TrainRequest } from '../../backends/trainer-protocol';
import { HF_PYTHON, TRAINER, hfSkipReason, startPyFixture, type PyFixture } from './hf-env';

const skip = hfSkipReason();
const OFFLINE = { HF_HUB_OFFLINE: '1', TRANSFORMERS_NO_ADVISORY_WARNINGS: '1' };
// One compute thread for the Python processes: on a loaded 2-core machine a second OpenMP thread mostly spins.
const ONE_THREAD = { OMP_NUM_THREADS: '1' };
const DOMAIN = path.join(ROOT, 'tests', 'hf', 'fixtures', 'parity-domain');
// The random model never ends a reply on its own, and each token costs tens of ms on a loaded CPU: a context
// 16 tokens longer than the (equal-length) prompts keeps every reply to 16 tokens, so a request takes ~1 s.
const MAX_CONTEXT = renderChatPrompt([{ role: 'user', content: 'Say ruby 00.' }]).length + 16;
let cluster: ScaleCluster;
let dir: string;
let serve: ChildProcess | undefined;
/** The test's own Python work (the tiny model, the recomputed losses): one process, one torch import. */
let py: PyFixture | undefined;
let folder: string;
let modelEnv: Record<string, string>;
/** The hf/ folder of the first run's agent bundle (the second test starts a run from it). */
let bundleHf: string | undefined;

/** The model folder and the server on it; resolves with the server's port once it answers. */
async function modelAndServer(): Promise<number> {
  folder = path.join(dir, 'qwen2-tiny');
  py = startPyFixture({ ...process.env, ...OFFLINE, ...ONE_THREAD });
  await py.call({ tiny: folder });
  const port = await freePort();
  // Its own process group, so its workers go down with it.
  serve = spawn(path.join(path.dirname(HF_PYTHON), 'transformers'), ['serve', '--host', '127.0.0.1', '--port', String(port), '--device', 'cpu'],
    { cwd: dir, env: { ...process.env, ...OFFLINE, ...ONE_THREAD }, stdio: 'ignore', detached: true });
  await waitFor('transformers serve to answer /health', async () => (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) || undefined, 180_000);
  return port;
}

before(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(tmpdir(), 'whale-hf-e2e-'));
  // Both start-ups are mostly waiting (the dev server; Python importing torch): side by side.
  const [started, served] = await Promise.allSettled([startScaleCluster(), modelAndServer()]);
  if (started.status === 'fulfilled') cluster = started.value; // torn down by after() whatever else failed
  if (started.status === 'rejected') throw started.reason;
  if (served.status === 'rejected') throw served.reason;
  const port = served.value;
  modelEnv = {
    ...OFFLINE, WHALE_MODEL_THREADS: '1',
    WHALE_MODEL_BACKENDS: JSON.stringify({
      rollouts: { kind: 'openai', baseUrl: `http://127.0.0.1:${port}/v1`, api: 'chat', tokenizer: 'foreign', dialect: 'transformers-serve', maxContext: MAX_CONTEXT, maxConcurrency: 1 },
      trainer: { kind: 'command', command: [HF_PYTHON, TRAINER, '--threads', '1'] },
    }),
  };
  cluster.startWorker('orchestration', 'orchestration');
  cluster.startWorker('proposer', 'proposer');
});
after(async () => {
  if (serve?.pid && serve.exitCode === null) {
    const exited = new Promise((r) => serve?.once('exit', r));
    process.kill(-serve.pid, 'SIGTERM');
    await exited;
  }
  await py?.close();
  await cluster?.teardown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The `whale` CLI against the cluster, as a user runs it (`status`: the exit status it must end with). */
function whale(args: string[], status = 0) {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], { encoding: 'utf8', env: { ...process.env, ...cluster.env }, cwd: cluster.dir, timeout: 300_000 });
  assert.equal(r.status, status, `whale ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

/** The pids of a process's live children (Linux /proc). */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
  } catch {
    return [];
  }
}
const cmdline = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
};

describe('a WHALE run on a Hugging Face model through transformers serve and the reference trainer', { skip }, () => {
  it('trains kept calls only, writes a folder per step, survives a killed model worker, and is audited', async (t) => {
    const started = Date.now();
    const pointer = JSON.parse(whale(['import', folder, '--pointer', '--store', cluster.artifactDir]).trim()) as ArtifactRef;
    const config = {
      version: 1, method: 'whale-fixed', domain: formatDomainRef(DOMAIN, hashDomainFolder(DOMAIN)), seed: 5,
      model: { baseCheckpoint: pointer },
      // One minibatch per step (6 rollouts, minibatches of 8 trajectories): its mean loss is the loss at the step's base.
      weight: { promptsPerStep: 2, samplesPerPrompt: 3, minibatchSize: 8, minibatchUnit: 'trajectories', learningRate: 1e-3, deterministic: true },
      switching: { kind: 'fixed', weightEpochs: 0.001, harnessRounds: 2 },
      harness: { candidatesPerRound: 1, taskLimit: 2 },
      budget: { totalWeightSteps: 2 },
      test: { everyEpochs: 1, samplesPerTask: 1, taskLimit: 2 },
      execution: { rollout: { heartbeatTimeout: '120s' }, fineTune: { heartbeatTimeout: '20s' }, evaluate: { heartbeatTimeout: '120s' } },
    };
    const worker = cluster.startWorker('model', 'model-1', modelEnv);
    const handle = await cluster.client.workflow.start('whaleRun', { taskQueue: cluster.config.taskQueues.orchestration, workflowId: 'hf-e2e', args: [config] });

    // Mid step: the trainer command is running (its request written, no answer yet). Kill the worker and the
    // trainer it started, as a preempted machine loses both; a new worker takes the retried step.
    const trainerPid = await waitFor('the first fine-tune step\'s trainer to run', async () => {
      if (worker.exitCode !== null) throw new Error(`the model worker exited: ${cluster.log('model-1').slice(-3000)}`);
      return childrenOf(worker.pid as number).find((p) => cmdline(p).includes('train.py'));
    }, 240_000);
    await cluster.kill(worker, 'SIGKILL');
    try {
      process.kill(trainerPid, 'SIGKILL');
    } catch {
      // it had already finished
    }
    const killedAt = Date.now();
    cluster.startWorker('model', 'model-2', modelEnv);
    const summary = (await handle.result()) as RunSummary;
    t.diagnostic(`run done in ${((Date.now() - started) / 1000).toFixed(0)} s (worker killed after ${((killedAt - started) / 1000).toFixed(0)} s); CPU ${cluster.cpuSeconds().toFixed(0)} s`);

    const history = await handle.fetchHistory();
    const scheduled = new Map<string, string>();
    let retriedSteps = 0;
    for (const e of history.events ?? []) {
      if (e.activityTaskScheduledEventAttributes) scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
      const s = e.activityTaskStartedEventAttributes;
      if (s && scheduled.get(String(s.scheduledEventId)) === 'fineTuneStep' && (s.attempt ?? 1) > 1) retriedSteps++;
    }
    assert.ok(retriedSteps >= 1, 'the killed worker\'s fine-tune step was retried by the new worker');
    assert.deepEqual(summary.phases.map((p) => p.kind), ['weight', 'harness', 'weight']);
    assert.equal(summary.weightStepsDone, 2);

    const store = new DirectoryArtifactStore(cluster.artifactDir);
    const steps = await activityResults<FineTuneStepResult>(cluster.client, 'hf-e2e', 'fineTuneStep');
    const rollouts = await activityResults<RolloutBatchResult>(cluster.client, 'hf-e2e', 'rolloutBatch');
    assert.equal(steps.length, 2);
    assert.ok(steps.every((s) => s.updated), `both steps keep trajectories: ${JSON.stringify(steps)}`);
    const folders = [folder];
    for (const [i, step] of steps.entries()) {
      const p = await readCheckpointPointer(store, step.checkpoint);
      assert.ok(p, `step ${i + 1} answers a checkpoint pointer`);
      assert.equal(p.parent, folders[folders.length - 1], 'each step trains the previous step\'s folder');
      assert.ok(!folders.includes(p.model) && existsSync(path.join(p.model, 'model.safetensors')), `step ${i + 1} wrote a new folder: ${p.model}`);
      folders.push(p.model);
    }
    assert.equal((await readCheckpointPointer(store, summary.finalCheckpoint))?.model, folders[2], 'the run ends on the last step\'s folder');

    // Each step's dataset: exactly the kept calls of its accepted trajectories; the loss: their assistant tokens.
    const requests = readdirSync(path.join(cluster.artifactDir, 'external-trainer'))
      .map((d) => path.join(cluster.artifactDir, 'external-trainer', d, 'request.json')).filter((f) => existsSync(f))
      .map((f) => ({ file: f, req: JSON.parse(readFileSync(f, 'utf8')) as TrainRequest })).sort((a, b) => a.req.step - b.req.step);
    assert.equal(requests.length, 2, 'one trainer request per step');
    let rejected = 0;
    const recomputed = await py!.call<{ trained_tokens: number; mean_loss: number; all_tokens_loss: number; loss_mask_last_assistant_only: boolean }[]>({ step_loss: requests.map((r) => r.file) });
    for (const [i, { req }] of requests.entries()) {
      assert.equal(req.base_checkpoint.model, folders[i]);
      const trajectories = trajectoriesFromJsonl((await store.get(rollouts[i].trajectories)).toString('utf8'));
      const accepted = trajectories.filter((tr) => tr.reward > 0.5);
      rejected += trajectories.length - accepted.length;
      const want = accepted.flatMap((tr) => tr.modelCalls.flatMap((c, k) => (c.kept ? [`${tr.trajectoryId}/${k}`] : []))).sort();
      const records = readFileSync(req.dataset.path, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as DatasetRecord);
      assert.deepEqual(records.map((r) => r.id).sort(), want, `step ${i + 1}: the dataset is the accepted trajectories' kept calls`);
      const ref = recomputed[i];
      t.diagnostic(`step ${i + 1}: ${records.length} records of ${accepted.length}/${trajectories.length} accepted trajectories; trained tokens ${steps[i].acceptedTokens} (recomputed ${ref.trained_tokens}); mean loss ${steps[i].meanLoss?.toFixed(5)} (recomputed ${ref.mean_loss.toFixed(5)}; over every token ${ref.all_tokens_loss.toFixed(5)})`);
      assert.ok(ref.loss_mask_last_assistant_only, 'the loss mask marks only the last (assistant) message');
      assert.equal(steps[i].minibatches, 1);
      assert.equal(steps[i].acceptedTokens, ref.trained_tokens, 'the trainer trained exactly the assistant tokens');
      assert.ok(Math.abs((steps[i].meanLoss as number) - ref.mean_loss) <= 1e-4, `mean loss ${steps[i].meanLoss} vs ${ref.mean_loss} recomputed over the assistant tokens`);
    }
    assert.ok(rejected > 0, 'some trajectories were rejected, so the filter was exercised');

    // The recorded decisions, explained.
    const audit = whale(['audit', 'hf-e2e', '--out', 'audit']);
    assert.match(audit, /3 phases explained, 0 mismatch\(es\)/);
    const md = readFileSync(path.join(cluster.dir, 'audit', 'summary.md'), 'utf8');
    assert.match(md, /Status: \*\*completed\*\*/);
    for (const f of folders) assert.ok(md.includes(`\`${f}\``), `the audit names the weights' folder ${f}:\n${md.slice(0, 3000)}`);
    assert.match(whale(['status', 'hf-e2e']), /2 trainer step folders with the served weights/);

    // gc keeps the retained run's step folders (its pointers name them) and removes one nothing points to.
    const dead = path.join(cluster.artifactDir, 'external-trainer', '0'.repeat(32));
    mkdirSync(path.join(dead, 'hf-step-1-x'), { recursive: true });
    writeFileSync(path.join(dead, 'hf-step-1-x', 'model.safetensors'), 'weights of a deleted run');
    for (const p of [path.join(dead, 'hf-step-1-x', 'model.safetensors'), path.join(dead, 'hf-step-1-x'), dead]) utimesSync(p, new Date(Date.now() - 7_200_000), new Date(Date.now() - 7_200_000));
    const gc = whale(['gc', '--yes', '--grace', '1h']);
    assert.match(gc, new RegExp(`step     external-trainer/${'0'.repeat(32)}`));
    assert.ok(!existsSync(dead), gc);
    for (const f of folders.slice(1)) assert.ok(existsSync(path.join(f, 'model.safetensors')), `gc kept ${f}:\n${gc}`);

    // The bundle carries the served weights as its HF folder; the embedded `agent run` refuses it by name.
    whale(['agent', 'export', 'hf-e2e', '--out', 'bundle']);
    const manifest = BundleManifestSchema.parse(JSON.parse(readFileSync(path.join(cluster.dir, 'bundle', 'manifest.json'), 'utf8')));
    assert.equal(manifest.checkpoint, null);
    assert.equal(manifest.hf?.source, 'pointer');
    assert.ok(readFileSync(path.join(cluster.dir, 'bundle', 'hf', 'model.safetensors')).equals(readFileSync(path.join(folders[2], 'model.safetensors'))));
    assert.match(whale(['agent', 'run', 'bundle', 'parity/00', '--trust-bundle-code'], 2), /served model: its weights are the Hugging Face folder .*whale run <config> --from/s);
    bundleHf = path.join(cluster.dir, 'bundle', 'hf');
  });

  it('starts a new run from that bundle (whale start --from <bundle>): a pointer to its hf/ folder, served and trained on', async (t) => {
    assert.ok(bundleHf, 'the run before exported its bundle');
    const started = Date.now();
    // No domain and no base checkpoint: both come from the bundle (its domain/ copy needs --trust-bundle-code).
    const child = {
      version: 1, method: 'weights-only', seed: 6,
      weight: { promptsPerStep: 2, samplesPerPrompt: 3, minibatchSize: 8, minibatchUnit: 'trajectories', learningRate: 1e-3, deterministic: true },
      budget: { totalWeightSteps: 1 }, test: { everyEpochs: 1, samplesPerTask: 1, taskLimit: 2 },
      execution: { rollout: { heartbeatTimeout: '120s' }, fineTune: { heartbeatTimeout: '20s' }, evaluate: { heartbeatTimeout: '120s' } },
    };
    writeFileSync(path.join(cluster.dir, 'from-bundle.json'), JSON.stringify(child));
    whale(['start', 'from-bundle.json', '--from', 'bundle', '--trust-bundle-code', '--id', 'hf-from-bundle']);
    const summary = (await cluster.client.workflow.getHandle('hf-from-bundle').result()) as RunSummary;
    t.diagnostic(`run from the bundle done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    assert.equal(summary.weightStepsDone, 1);

    // Its one step trained the bundle's folder (served by path) into a new folder of the artifact store.
    const store = new DirectoryArtifactStore(cluster.artifactDir);
    const [step] = await activityResults<FineTuneStepResult>(cluster.client, 'hf-from-bundle', 'fineTuneStep');
    assert.ok(step?.updated, `the step kept trajectories: ${JSON.stringify(step)}`);
    const p = await readCheckpointPointer(store, step.checkpoint);
    assert.equal(p?.parent, bundleHf, 'the step trained the bundle\'s hf/ folder');
    assert.ok(p && p.model.startsWith(path.join(cluster.artifactDir, 'external-trainer')) && existsSync(path.join(p.model, 'model.safetensors')), `a new step folder: ${p?.model}`);
    assert.equal((await readCheckpointPointer(store, summary.finalCheckpoint))?.model, p?.model);

    // The audit records where the start weights came from: the bundle, exported from the first run.
    whale(['audit', 'hf-from-bundle', '--out', 'audit-from-bundle']);
    const md = readFileSync(path.join(cluster.dir, 'audit-from-bundle', 'summary.md'), 'utf8');
    assert.match(md, /Lineage: branched from agent bundle `[^`]*bundle` .*exported from run `hf-e2e`/);
    assert.ok(md.includes(`| start | `) && md.includes(`\`${bundleHf}\``), `the audit names the bundle's folder as the start weights:\n${md.slice(0, 3000)}`);
  });
});
