// Three runs at once on the same real workers (orchestration, model, proposer processes) and the same
// artifact store, in deterministic mode with small sizes on the math domain's real base policy: each must
// end exactly as it does when it runs alone (every fine-tune step's checkpoint hash, every rollout's mean
// reward, every test score, every harness candidate's score and the accepted harness, the final pair).
// `whale list` then shows the three with their phase, step and best score.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { activityResults, startFaultCluster, type FaultCluster } from '../../testbed/fault-cluster';
import { ROOT } from '../../testbed/env';
import type { RunSummary } from '../../workflows/run-state';
import type { EvaluateHarnessResult, EvaluateTestResult, FineTuneStepResult, RolloutBatchResult } from '../../activities/types';

const execFileP = promisify(execFile);
let cluster: FaultCluster;
// One sampler thread: the kernels (and so the samples) do not depend on how the runs interleave.
const MODEL_ENV = { WHALE_MODEL_THREADS: '1' };

before(async () => {
  cluster = await startFaultCluster();
  cluster.startWorker('orchestration');
  cluster.startWorker('model', MODEL_ENV);
  cluster.startWorker('proposer');
});
after(async () => cluster?.teardown());

// Sized to what the comparison needs (six runs: each alone, then the three together): a step with accepted
// rollouts to train on, two harness candidates, a test score per evaluation; more rows would compare the same.
const small = {
  version: 1, domain: 'math',
  weight: { promptsPerStep: 8, samplesPerPrompt: 4, minibatchSize: 8, learningRate: 3e-4, deterministic: true },
  harness: { candidatesPerRound: 2, taskLimit: 4 },
  test: { everyEpochs: 1000, samplesPerTask: 2, taskLimit: 8 },
};
const RUNS: Record<string, Record<string, unknown>> = {
  weights: { ...small, method: 'weights-only', seed: 1, budget: { totalWeightSteps: 2 } },
  whale: { ...small, method: 'whale-fixed', seed: 2, switching: { kind: 'fixed', weightEpochs: 0.001, harnessRounds: 2 }, budget: { totalWeightSteps: 2 } },
  harness: { ...small, method: 'harness-only', seed: 3, budget: { totalWeightSteps: 0, harnessOnlyProposalRounds: 1 } },
};

/** Everything a run decided and produced, minus its workflow id. */
async function outcome(workflowId: string, summary: RunSummary) {
  const { runId: _id, ...rest } = summary;
  const c = cluster.client;
  return {
    summary: rest,
    rollouts: (await activityResults<RolloutBatchResult>(c, workflowId, 'rolloutBatch')).map((r) => ({ reward: r.meanReward, accepted: r.accepted, trajectories: r.trajectories.sha256 })),
    fineTunes: (await activityResults<FineTuneStepResult>(c, workflowId, 'fineTuneStep')).map((r) => ({ checkpoint: r.checkpoint.sha256, updated: r.updated, loss: r.meanLoss })),
    tests: (await activityResults<EvaluateTestResult>(c, workflowId, 'evaluateTest')).map((r) => r.meanAt8),
    candidates: (await activityResults<EvaluateHarnessResult>(c, workflowId, 'evaluateHarness')).map((r) => ({ success: r.successRate, turns: r.meanTurns, trajectories: r.trajectories.sha256 })),
  };
}

describe('concurrent runs', () => {
  it('three runs on the same workers and store end exactly as each does alone', async (t) => {
    const q = cluster.config.taskQueues.orchestration;
    const run = async (id: string, config: Record<string, unknown>) => {
      const summary = (await cluster.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: id, args: [config] })) as RunSummary;
      return outcome(id, summary);
    };
    const t0 = Date.now();
    const alone: Record<string, Awaited<ReturnType<typeof outcome>>> = {};
    for (const [name, config] of Object.entries(RUNS)) alone[name] = await run(`alone-${name}`, config);
    const t1 = Date.now();
    const together = Object.fromEntries(await Promise.all(Object.entries(RUNS).map(async ([name, config]) => [name, await run(`together-${name}`, config)] as const)));
    const t2 = Date.now();

    // The runs must do real work for the comparison to mean anything.
    assert.ok(alone.weights.fineTunes.some((f) => f.updated), `the weights-only run must train: ${JSON.stringify(alone.weights.fineTunes)}`);
    assert.ok(alone.whale.summary.phases.some((p) => p.kind === 'harness') && alone.whale.candidates.length >= 2, JSON.stringify(alone.whale.summary.phases));
    assert.equal(alone.harness.summary.proposalRoundsDone, 1);
    for (const name of Object.keys(RUNS)) assert.deepEqual(together[name], alone[name], `run ${name}: concurrent result differs from its run alone`);
    t.diagnostic(`alone (one after another) ${((t1 - t0) / 1000).toFixed(1)} s, together ${((t2 - t1) / 1000).toFixed(1)} s; final checkpoints ${Object.keys(RUNS).map((n) => `${n} ${alone[n].summary.finalCheckpoint.sha256.slice(0, 12)}`).join(', ')}; best mean@8 ${Object.keys(RUNS).map((n) => `${n} ${alone[n].summary.bestMeanAt8}`).join(', ')}`);

    const env = { ...process.env, WHALE_TEMPORAL_ADDRESS: cluster.config.address };
    const { stdout } = await execFileP(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), 'list'], { env, timeout: 120_000 });
    const lines = stdout.trim().split('\n');
    assert.match(lines[0], /^WORKFLOW ID\s+STATUS\s+METHOD\s+DOMAIN\s+PHASE\s+STEP\s+ROLLOUTS\s+BEST\s+FINAL\s+STARTED$/);
    for (const [name, config] of Object.entries(RUNS)) {
      const row = lines.find((l) => l.startsWith(`together-${name} `));
      assert.ok(row, `whale list lacks together-${name}:\n${stdout}`);
      const s = together[name].summary;
      const cols = row.trim().split(/\s{2,}/);
      assert.deepEqual(cols.slice(0, 8), [`together-${name}`, 'COMPLETED', String(config.method), 'math', 'done', String(s.weightStepsDone), String(s.ledger.training + s.ledger.search), s.bestMeanAt8 === null ? '-' : s.bestMeanAt8.toFixed(3)]);
    }
  });
});
