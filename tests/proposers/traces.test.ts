// Failure categories the built-in proposer counts, on real trajectories from the agent loop (a domain
// teacher as the model, h0 in process), and that those counts steer its choice of mechanism.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runEpisodes } from '../../agent/loop';
import { trajectoriesToJsonl } from '../../agent/trajectory';
import { proposeBuiltin } from '../../activities/proposers/builtin';
import { FAILURE_CATEGORIES, traceStats } from '../../activities/proposers/trace-stats';
import { openArchive, recordCandidateEvaluation } from '../../activities/archive';
import { readSeedHarness } from '../../domains/harnesses';
import { TeacherBackend, createTeacher } from '../../domains/teachers';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { cleanupDir, domainInstance, path } from './fixtures';
import { mkdtempSync } from 'node:fs';
import * as os from 'node:os';

test('trace statistics on real h0 trajectories add up', async () => {
  for (const domain of ['search-qa', 'math', 'chess'] as const) {
    const inst = domainInstance(domain);
    const tasks = inst.splits.harness.slice(0, 24);
    const loaded = loadHarnessInProcess(readSeedHarness(domain));
    assert.ok(loaded.ok);
    const backend = new TeacherBackend(tasks, createTeacher(domain, inst), { runSeed: 5, step: 1, samplesPerTask: 1, maxTurns: 2 });
    const { trajectories } = await runEpisodes({
      backend, environment: inst.environment, harness: loaded.runner, tasks, samplesPerTask: 1, runSeed: 5, step: 1,
      sampling: { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 64, maxEpisodeTokens: 512 },
    });
    const s = traceStats(trajectoriesToJsonl(trajectories));
    assert.equal(s.episodes, trajectories.length);
    assert.equal(s.successes, trajectories.filter((t) => t.reward === 1).length);
    assert.equal(FAILURE_CATEGORIES.reduce((a, c) => a + s.failures[c], 0), s.episodes - s.successes);
    assert.equal(s.meanTurns, trajectories.reduce((a, t) => a + t.turns.length, 0) / trajectories.length);
    assert.ok(s.failedWithoutTool <= s.episodes - s.successes);
  }
});

test('failure categories steer the mechanism: turn-limit failures favour a larger turn budget', async () => {
  const inst = domainInstance('search-qa');
  const lines = (stop: string) => Array.from({ length: 40 }, (_, i) => JSON.stringify({ reward: i < 4 ? 1 : 0, stopReason: i < 4 ? 'answer' : stop, turns: [{ action: { kind: 'tool' } }, { action: { kind: 'tool' } }] }) + '\n').join('');
  const turnBudgetPicks: Record<string, number> = {};
  for (const stop of ['turn-limit', 'answer']) {
    const root = mkdtempSync(path.join(os.tmpdir(), 'whale-steer-'));
    try {
      const archive = openArchive(root, 'run/harness-phase-1');
      await recordCandidateEvaluation(archive, 'incoming', { successRate: 0.1, meanTurns: 2, meanTokens: 30, rollouts: 40, trajectoriesJsonl: lines(stop), source: readSeedHarness('search-qa') });
      let picks = 0;
      for (let seed = 0; seed < 30; seed++) {
        const { candidates } = await proposeBuiltin({
          domain: 'search-qa', seed, round: 1, count: 1, promptOnly: false, accepted: 'incoming', workspace: archive.dir,
          tools: inst.environment.tools, answerKind: inst.environment.answerKind, sampleViews: [], heartbeat: () => undefined, heartbeatMs: 1000,
          signal: new AbortController().signal,
        }, archive, { allowConstantOnly: true }); // turn-budget changes only a number: off unless opted in
        if (candidates[0]?.entry.changes?.startsWith('maxTurns')) picks++;
      }
      turnBudgetPicks[stop] = picks;
    } finally {
      cleanupDir(root);
    }
  }
  assert.ok(turnBudgetPicks['turn-limit'] > turnBudgetPicks.answer + 3, JSON.stringify(turnBudgetPicks));
});
