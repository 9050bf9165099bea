// Protocol 'equal' on a real dev server: an alternating run stays within its rollout budget and ends with a
// weight phase (the same run without the protocol overshoots), harness stages propose until the budget is
// spent, and an exhausted proposer ends a harness-only run early with its unspent budget reported.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTestWorker, startTestServer, testConfig } from './env';
import { scriptedActivities, type Script } from './scripted-activities';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './env';
import type { RunSummary } from '../../workflows/run-state';

let env: TestWorkflowEnvironment;
before(async () => (env = await startTestServer()));
after(async () => env?.teardown());

// 10 prompts x 2 samples = 20 rollouts a step, 10 steps an epoch; D_harness 8 tasks, so round 0 costs 8 and a
// proposal round of 2 candidates 16. Lenient: every step, test and candidate gets a score.
const SCRIPT: Script = { splitSizes: { weight: 100, harness: 8, test: 4 }, rewards: [0.3], testScores: [0.2], candidateScores: {}, lenient: true };

async function run(id: string, overrides: Record<string, unknown>, script: Partial<Script> = {}) {
  const s = scriptedActivities({ ...SCRIPT, ...script });
  // Validation's smoke run costs no target-model rollout in the real proposer worker (the test double says 2).
  const activities = {
    ...s.activities,
    validateHarness: async (input: Parameters<typeof s.activities.validateHarness>[0]) => ({ ...(await s.activities.validateHarness(input)), rollouts: 0 }),
    // The double scores a candidate on all of D_harness; the real activity on harness.taskLimit tasks.
    evaluateHarness: async (input: Parameters<typeof s.activities.evaluateHarness>[0]) => {
      const result = await s.activities.evaluateHarness(input);
      return { ...result, rollouts: Math.min(result.rollouts, input.taskLimit ?? result.rollouts) * input.rolloutsPerTask };
    },
    rolloutBatch: async (input: Parameters<typeof s.activities.rolloutBatch>[0]) => {
      taskLimits.push(input.taskLimit);
      return s.activities.rolloutBatch(input);
    },
  };
  const taskLimits: (number | undefined)[] = [];
  const worker = await createTestWorker(env, id, activities);
  const config = overrides.version === 1 ? { ...overrides, execution: { modelTaskQueue: id, proposerTaskQueue: id } } : testConfig(id, { harness: { candidatesPerRound: 2 }, ...overrides });
  const summary = await worker.runUntil(env.client.workflow.execute('whaleRun', { taskQueue: id, workflowId: id, args: [config] })) as RunSummary;
  return { summary, calls: s.calls, taskLimits, spent: summary.ledger.training + summary.ledger.search, phases: summary.phases.map((p) => `${p.kind}:${p.startStep}-${p.endStep}:${p.proposalRounds}`) };
}

const FIXED = { method: 'whale-fixed', switching: { kind: 'fixed', weightEpochs: 0.3, harnessRounds: 3 } };

describe('protocol equal', () => {
  it('WHALE fixed: a harness phase starts only when its rounds at cap and a weight step fit; the run ends with a weight phase within budget', async () => {
    const { summary, spent, phases } = await run('equal-fixed', { ...FIXED, budget: { protocol: 'equal', totalWeightSteps: 10, maxRollouts: 190 } });
    // W1 3 steps (60); the harness phase needs 8 + 2 x 16 + 20 = 60 of the 130 left: it runs (100 spent). W2: after
    // 3 steps (160) the next phase would need 60 of 30: refused, the weight phase goes on while a whole step fits (180).
    assert.deepEqual(phases, ['weight:0-3:0', 'harness:3-3:2', 'weight:3-7:0']);
    assert.equal(spent, 180);
    assert.deepEqual(summary.budget, { protocol: 'equal', maxRollouts: 190, totalWeightSteps: 10, spentRollouts: 180, unspentRollouts: 10, withinBudget: true });
    assert.match(summary.phases[2].rule, /^budget reached/);
  });

  it('WHALE adaptive: a patience switch the rest cannot pay for is refused and the weight phase goes on', async () => {
    const { summary, spent, phases } = await run('equal-adaptive', {
      method: 'whale-adaptive',
      switching: { kind: 'patience', windowEpochs: 0.1, burnInEpochs: 0.1, patienceEpochs: 0.1, harnessMinProposalRounds: 1, harnessPatienceRounds: 1, harnessMaxProposalRounds: 2 },
      budget: { protocol: 'equal', totalWeightSteps: 10, maxRollouts: 150 },
    });
    // Patience fires at step 2 (40 spent); the phase at its cap needs 8 + 2 x 16 + 20 = 60 of 110: it runs to 80.
    // In the next weight phase patience fires at step 4 (120) with 30 left: refused; step 5 (140) spends the rest.
    assert.deepEqual(phases, ['weight:0-2:0', 'harness:2-2:2', 'weight:2-5:0']);
    assert.equal(spent, 140);
    assert.match(summary.phases[2].rule, /^budget reached/);
  });

  it('the same run without the protocol overshoots the budget (what the protocol fixes)', async () => {
    const { summary, spent, phases } = await run('none-fixed', { ...FIXED, budget: { totalWeightSteps: 10, maxRollouts: 190 } });
    // The second harness phase starts at 160 and ends at 200; the last weight phase ends before its first step.
    assert.deepEqual(phases, ['weight:0-3:0', 'harness:3-3:2', 'weight:3-6:0', 'harness:6-6:2', 'weight:6-6:0']);
    assert.equal(spent, 200);
    assert.equal(summary.budget?.protocol, 'none');
    assert.equal(summary.budget?.withinBudget, false);
  });

  it('stagewise weights-first: the last harness stage proposes until the rest cannot pay a round', async () => {
    const { summary, spent, phases } = await run('equal-stagewise', { method: 'stagewise', stagewiseOrder: 'weights-first', budget: { protocol: 'equal', totalWeightSteps: 2, maxRollouts: 100, harnessOnlyProposalRounds: 1 } });
    // 2 steps (40), round 0 (48), rounds of 16 while 16 are left: 64, 80, 96; 4 left. harnessOnlyProposalRounds
    // (1) does not hold a last stage under this protocol.
    assert.deepEqual(phases, ['weight:0-2:0', 'harness:2-2:3']);
    assert.equal(spent, 96);
    assert.equal(summary.budget?.unspentRollouts, 4);
    assert.match(summary.phases[1].rule, /^budget: rest 4 < next proposal round at cap 16 \+ reserve 0$/);
  });

  it('stagewise harness-first: each round leaves a weight step, then the weight stage spends the rest', async () => {
    const { summary, spent, phases } = await run('equal-harness-first', { method: 'stagewise', stagewiseOrder: 'harness-first', budget: { protocol: 'equal', totalWeightSteps: 10, maxRollouts: 100, harnessOnlyProposalRounds: 10 } });
    // Round 0 (8), rounds of 16 while 16 + 20 remain: 24, 40, 56, 72; then one weight step (92): 8 left.
    assert.deepEqual(phases, ['harness:0-0:4', 'weight:0-1:0']);
    assert.equal(spent, 92);
    assert.match(summary.phases[0].rule, /^budget: rest 28 < next proposal round at cap 16 \+ reserve 20$/);
    assert.equal(summary.budget?.unspentRollouts, 8);
  });

  it('harness-only: an exhausted proposer ends the run early and the unspent budget is reported', async () => {
    const { summary, spent, phases } = await run('equal-exhausted', {
      method: 'harness-only', budget: { protocol: 'equal', totalWeightSteps: 0, maxRollouts: 1000, exhaustedAfterRounds: 2 },
    }, { proposerFails: ['harness-phase-1/r2'], invalid: ['harness-phase-1/r3-c1', 'harness-phase-1/r3-c2'] });
    // Round 0 (8), round 1 scores 2 new harnesses (16); round 2 writes nothing; round 3's candidates are all invalid.
    assert.deepEqual(phases, ['harness:0-0:3']);
    assert.match(summary.phases[0].rule, /^proposer exhausted: 2 proposal rounds in a row/);
    assert.equal(spent, 8 + 16);
    assert.equal(summary.budget?.unspentRollouts, 1000 - 24);
    assert.equal(summary.budget?.withinBudget, true);
  });

  it('weight.taskLimit: epochs, the test cadence and the sampler cursor count over the subset', async () => {
    const { calls, taskLimits, phases } = await run('task-limit', {
      method: 'weights-only', weight: { promptsPerStep: 10, samplesPerPrompt: 2, taskLimit: 30 }, budget: { totalWeightSteps: 7 },
    });
    // 30 prompts = 3 steps an epoch: the cursor wraps after step 3, D_test every epoch (steps 3 and 6), then final.
    assert.deepEqual(phases, ['weight:0-7:0']);
    assert.deepEqual(calls.filter((c) => c.activity === 'rolloutBatch').map((c) => c.detail.split(' cursor ')[1]), ['0:0', '0:10', '0:20', '1:0', '1:10', '1:20', '2:0']);
    assert.deepEqual(calls.filter((c) => c.activity === 'evaluateTest').map((c) => c.detail), ['initial', 'step-3', 'step-6', 'final']);
    assert.deepEqual(taskLimits, Array(7).fill(30));
  });

  it('presets/compare-3-epochs.json runs the schedule docs/method.md states: W6 H W6 H W10, 15,360 rollouts', async () => {
    const preset = JSON.parse(readFileSync(path.join(ROOT, 'presets', 'compare-3-epochs.json'), 'utf8')) as Record<string, unknown>;
    const { summary, spent, phases } = await run('preset-equal', preset, { splitSizes: { weight: 2000, harness: 256, test: 500 } });
    assert.deepEqual(phases, ['weight:0-6:0', 'harness:6-6:5', 'weight:6-12:0', 'harness:12-12:5', 'weight:12-22:0']);
    assert.equal(spent, 15_360);
    assert.deepEqual([summary.ledger.training, summary.ledger.search], [22 * 512, 2 * (128 + 5 * 384)]);
    assert.match(summary.phases[4].rule, /^budget reached/);
    // The grid: 2,560 after step 5; 5,120 and 10,240 at the harness phases' ends; 7,680 after step 11; 12,800 after step 17; 15,360 last.
    assert.deepEqual(summary.gridEvaluations?.map((e) => [e.gridPoint, e.atRollouts, e.atWeightStep]),
      [[2560, 2560, 5], [5120, 5120, 6], [7680, 7680, 11], [10240, 10240, 12], [12800, 12800, 17], [15360, 15360, 22]]);
  });
});
