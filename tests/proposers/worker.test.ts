// The proposer worker (workers/proposer.ts) on a real Temporal dev server, driven by the real run
// workflow: a harness-only run whose proposer activities (built-in proposer, sandbox validation,
// finalize) are the real ones and whose model activities are a small scripted double that records
// scores and trajectories into the archive the way evaluateHarness does. The phase leaves a complete archive.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { openArchive, recordCandidateEvaluation } from '../../activities/archive';
import type { WhaleActivities } from '../../activities/types';
import { readSeedHarness } from '../../domains/harnesses';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { loadTemporalConfig } from '../../temporal.config';
import type { RunSummary } from '../../workflows/run-state';
import { createProposerWorker } from '../../workers/proposer';
import { startTestServer, workflowBundle } from '../workflows/env';
import { cleanupDir, fakeTrajectories } from './fixtures';

let env: TestWorkflowEnvironment;
before(async () => (env = await startTestServer()));
after(async () => env?.teardown());

const unexpected = (what: string): never => {
  throw ApplicationFailure.nonRetryable(`UNEXPECTED CALL: ${what}`, 'UnexpectedCall');
};

test('harness-only run: the real proposer worker proposes, validates and finalizes; the archive is complete', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'whale-proposer-worker-'));
  const store = new DirectoryArtifactStore(root);
  const q = 'proposer-worker-test';
  const qp = 'proposer-worker-test-proposer';
  const evaluated: string[] = [];
  const archiveKeys: string[] = [];
  // Model-side double: prepareRun, evaluateHarness (score from the source, deterministic), evaluateTest.
  const model: Pick<WhaleActivities, 'prepareRun' | 'evaluateHarness' | 'evaluateTest'> & Record<'rolloutBatch' | 'fineTuneStep', () => never> = {
    async prepareRun() {
      return { checkpoint: await store.put('checkpoint', 'weights'), harness: await store.put('harness', readSeedHarness('search-qa')), splitSizes: { weight: 100, harness: 12, test: 4 } };
    },
    async evaluateHarness(input) {
      const source = (await store.get(input.harness)).toString('utf8');
      evaluated.push(input.name);
      const successRate = Math.min(1, 0.2 + (source.length % 97) / 200);
      const result = { successRate, meanTurns: 2, meanTokens: 30, rollouts: 12 };
      archiveKeys.push(input.archiveKey);
      await recordCandidateEvaluation(openArchive(root, input.archiveKey), input.name, { ...result, trajectoriesJsonl: fakeTrajectories(12, 3), source });
      return { ...result, trajectories: await store.put('trajectories', fakeTrajectories(12, 3)) };
    },
    async evaluateTest(input) {
      return { meanAt8: 0.1, tasks: 4, rollouts: 4 * input.samplesPerTask, detail: await store.put('evaluation', input.label) };
    },
    rolloutBatch: () => unexpected('rolloutBatch in a harness-only run'),
    fineTuneStep: () => unexpected('fineTuneStep in a harness-only run'),
  };
  const orchestration = await Worker.create({ connection: env.nativeConnection, taskQueue: q, workflowBundle: await workflowBundle(), activities: model });
  const proposer = await createProposerWorker(env.nativeConnection, loadTemporalConfig({ artifactDir: root, taskQueues: { proposer: qp } }, {}));
  try {
    const config = {
      version: 1, domain: 'search-qa', method: 'harness-only', test: { samplesPerTask: 2 },
      harness: { candidatesPerRound: 2 }, budget: { harnessOnlyProposalRounds: 2 },
      execution: { modelTaskQueue: q, proposerTaskQueue: qp },
    };
    const summary = (await orchestration.runUntil(proposer.worker.runUntil(
      env.client.workflow.execute('whaleRun', { taskQueue: q, workflowId: 'proposer-worker-1', args: [config] }),
    ))) as RunSummary;
    assert.equal(summary.proposalRoundsDone, 2);
    assert.deepEqual(evaluated, ['incoming', 'r1-c1', 'r1-c2', 'r2-c1', 'r2-c2']);
    // Archive keys are <workflow id>/<first execution run id, 8 chars>/harness-phase-<n>.
    const keys = archiveKeys.filter((k) => /^proposer-worker-1\/[0-9a-f-]{8}\/harness-phase-1$/.test(k));
    assert.equal(new Set(keys).size, 1, `one archive key for phase 1, got ${JSON.stringify([...new Set(archiveKeys)])}`);
    const archive = openArchive(root, keys[0]);
    assert.equal(await archive.isComplete(), true);
    const rows = readFileSync(path.join(archive.dir, 'evolution_summary.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { name: string; status: string; accepted: boolean });
    assert.deepEqual(rows.map((r) => `${r.name}:${r.status}`), ['incoming:evaluated', 'r1-c1:evaluated', 'r1-c2:evaluated', 'r2-c1:evaluated', 'r2-c2:evaluated']);
    assert.equal(rows.filter((r) => r.accepted).length, 1);
    for (const name of ['r1-c1', 'r2-c2']) {
      const v = JSON.parse(readFileSync(path.join(archive.candidateDir(name), 'validation.json'), 'utf8')) as { valid: boolean };
      assert.equal(v.valid, true);
    }
    // The run's final harness is the accepted candidate's source, as stored by the proposer.
    const accepted = rows.find((r) => r.accepted)?.name ?? '';
    assert.equal((await store.get(summary.finalHarness)).toString(), readFileSync(path.join(archive.candidateDir(accepted), 'harness.ts'), 'utf8'));
  } finally {
    await proposer.close();
    cleanupDir(root);
  }
});
