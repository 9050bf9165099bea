// Acceptance (a) of scale-out: a small deterministic WHALE run (weight, harness, weight phase) whose rollouts
// go through the OpenAI-compatible backend to `whale serve` (a separate process that loads each new
// checkpoint from the shared store by name) and whose fine-tune steps go through the external-trainer
// protocol (`whale train-external` as a command), makes the same decisions as the in-process run: equal
// rewards, accept counts, checkpoints, harness scores, test scores and phase records.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { startScaleCluster, activityResults, type ScaleCluster } from '../../testbed/scale-cluster';
import { ROOT } from '../../testbed/env';
import type { RunSummary } from '../../workflows/run-state';
import type { EvaluateHarnessResult, EvaluateTestResult, FineTuneStepResult, RolloutBatchResult } from '../../activities/types';

let cluster: ScaleCluster;
let serveUrl = '';
const SERVED_QUEUE = 'whale-model-served';

before(async () => {
  cluster = await startScaleCluster();
  const served = await cluster.startServe([path.join(ROOT, 'data', 'base-policies', 'math.ckpt'), '--port', '0', '--threads', '1', '--store', cluster.artifactDir]);
  serveUrl = served.url;
  cluster.startWorker('orchestration', 'orchestration');
  cluster.startWorker('proposer', 'proposer');
  cluster.startWorker('model', 'model-embedded', { WHALE_MODEL_THREADS: '1' });
  cluster.startWorker('model', 'model-served', {
    WHALE_MODEL_THREADS: '1',
    WHALE_QUEUE_MODEL: SERVED_QUEUE,
    WHALE_MODEL_BACKENDS: JSON.stringify({
      rollouts: { kind: 'openai', baseUrl: serveUrl, api: 'completions', model: 'ckpt-{sha256}', tokenizer: 'project' },
      trainer: { kind: 'command', command: [process.execPath, path.join(ROOT, 'bin', 'whale.js'), 'train-external', '--threads', '1'] },
    }),
  });
});
after(async () => cluster?.teardown());

// Small: every kind of call (rollouts, a training step, harness and test scoring) crosses the two paths; more
// rows would compare the same.
const runConfig = (modelTaskQueue: string) => ({
  version: 1, method: 'whale-fixed', domain: 'math', seed: 3,
  weight: { promptsPerStep: 4, samplesPerPrompt: 4, minibatchSize: 8, learningRate: 1e-4, deterministic: true },
  switching: { kind: 'fixed', weightEpochs: 0.001, harnessRounds: 2 },
  harness: { candidatesPerRound: 1, taskLimit: 4 },
  budget: { totalWeightSteps: 2 },
  test: { everyEpochs: 1, samplesPerTask: 1, taskLimit: 8 },
  execution: { modelTaskQueue, rollout: { heartbeatTimeout: '60s' }, fineTune: { heartbeatTimeout: '60s' } },
});

/** What a run decided and measured, without references to files whose bytes may legitimately differ. */
async function decisions(id: string, summary: RunSummary) {
  const rollouts = (await activityResults<RolloutBatchResult>(cluster.client, id, 'rolloutBatch')).map(({ trajectories: _t, ...r }) => r);
  const steps = (await activityResults<FineTuneStepResult>(cluster.client, id, 'fineTuneStep')).map((s) => ({ checkpoint: s.checkpoint.sha256, updated: s.updated, accepted: s.acceptedTrajectories, tokens: s.acceptedTokens, minibatches: s.minibatches }));
  const harness = (await activityResults<EvaluateHarnessResult>(cluster.client, id, 'evaluateHarness')).map((h) => ({ successRate: h.successRate, meanTurns: h.meanTurns, meanTokens: h.meanTokens, rollouts: h.rollouts }));
  const tests = (await activityResults<EvaluateTestResult>(cluster.client, id, 'evaluateTest')).map((t) => t.meanAt8);
  return {
    rollouts, steps, harness, tests,
    summary: { weightStepsDone: summary.weightStepsDone, proposalRoundsDone: summary.proposalRoundsDone, initialMeanAt8: summary.initialMeanAt8, bestMeanAt8: summary.bestMeanAt8, finalMeanAt8: summary.finalMeanAt8, finalCheckpoint: summary.finalCheckpoint.sha256, finalHarness: summary.finalHarness.sha256, finalHarnessName: summary.finalHarnessName, phases: summary.phases, ledger: summary.ledger },
  };
}

describe('a WHALE run through whale serve and the external-trainer protocol', () => {
  it('makes the in-process run\'s decisions in deterministic mode', async (t) => {
    const q = cluster.config.taskQueues.orchestration;
    const started = Date.now();
    const [inproc, served] = await Promise.all([
      cluster.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'run-inproc', args: [runConfig(cluster.config.taskQueues.model)] }) as Promise<RunSummary>,
      cluster.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'run-served', args: [runConfig(SERVED_QUEUE)] }) as Promise<RunSummary>,
    ]);
    const a = await decisions('run-inproc', inproc);
    const b = await decisions('run-served', served);
    t.diagnostic(`CPU used by the server, workers, whale serve and the trainer commands: ${cluster.cpuSeconds().toFixed(0)} s`);
    t.diagnostic(`both runs done in ${((Date.now() - started) / 1000).toFixed(0)} s; steps ${JSON.stringify(b.steps)}; harness ${JSON.stringify(b.harness)}; tests ${JSON.stringify(b.tests)}`);

    assert.ok(a.steps.some((s) => s.updated && s.minibatches >= 1), `the run must train for the comparison to mean anything: ${JSON.stringify(a.steps)} ${JSON.stringify(a.rollouts)}`);
    assert.ok(a.summary.phases.some((p) => p.kind === 'harness'), 'the run must have a harness phase');
    assert.deepEqual(b.rollouts, a.rollouts, 'rollout batches (rewards, accepts, tokens, prompts) differ');
    assert.deepEqual(b.steps, a.steps, 'fine-tune steps (checkpoints) differ');
    assert.deepEqual(b.harness, a.harness, 'harness scores differ');
    assert.deepEqual(b.tests, a.tests, 'test scores differ');
    assert.deepEqual(b.summary, a.summary, 'run summaries (phases, ledger, final checkpoint and harness) differ');

    // The served run really went through the server and the external trainer.
    const requests = readdirSync(path.join(cluster.artifactDir, 'external-trainer')).filter((d) => existsSync(path.join(cluster.artifactDir, 'external-trainer', d, 'request.json')));
    assert.equal(requests.length, a.steps.filter((s) => s.updated).length, 'one external-trainer request per updating step');
    const models = (await (await fetch(`${serveUrl}/models`)).json()) as { data: Array<{ id: string }> };
    assert.ok(models.data.some((m) => m.id === `ckpt-${b.summary.finalCheckpoint}`), `whale serve must have loaded the final checkpoint by name: ${JSON.stringify(models.data.map((m) => m.id))}`);
  });
});
