// Teacher policies through the real agent loop: demonstrations replay exactly from the seeds, and the
// teachers' success depends on both levers the way the embedded model's should: on the choice they make
// (tool / search / listed move) and on what the harness shows (h0 vs the reference harness).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runEpisodes } from '../../agent/loop';
import type { Trajectory } from '../../agent/trajectory';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { chessTeacher } from '../../domains/chess/teacher';
import { TeacherBackend, type TeacherPolicy } from '../../domains/common/teacher';
import { readSeedHarness } from '../../domains/harnesses';
import { mathTeacher } from '../../domains/math/teacher';
import { readReferenceHarness } from '../../domains/reference-harnesses';
import { getDomain, type BuiltinDomainName } from '../../domains/registry';
import { createTeacher } from '../../domains/teachers';

const SAMPLING = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 96, maxEpisodeTokens: 400 };

async function rollout(domain: BuiltinDomainName, source: string, policy: TeacherPolicy<never>, samples: number, runSeed = 5): Promise<Trajectory[]> {
  const inst = getDomain(domain).load({ kind: 'synthetic' });
  const tasks = inst.splits.harness.slice(0, 128);
  const loaded = loadHarnessInProcess(source);
  if (!loaded.ok) assert.fail(loaded.violations.map((v) => v.message).join('; '));
  const backend = new TeacherBackend(tasks, policy as TeacherPolicy<unknown>, { runSeed, step: 0, samplesPerTask: samples, maxTurns: loaded.runner.manifest.config.maxTurns });
  const r = await runEpisodes({ backend, environment: inst.environment, harness: loaded.runner, tasks, samplesPerTask: samples, sampling: SAMPLING, runSeed, step: 0 });
  assert.ok(r.trajectories.every((t) => t.harnessFailure === null), 'no harness failures');
  return r.trajectories;
}

const rate = (ts: Trajectory[], f: (t: Trajectory) => boolean) => ts.filter(f).length / ts.length;
const success = (ts: Trajectory[]) => rate(ts, (t) => t.reward === 1);
const report: string[] = [];

test('math teacher: calculator use and success are higher under the reference harness; replays exactly', async () => {
  const h0 = await rollout('math', readSeedHarness('math'), mathTeacher() as TeacherPolicy<never>, 2);
  const ref = await rollout('math', readReferenceHarness('math'), mathTeacher() as TeacherPolicy<never>, 2);
  const toolUse = (ts: Trajectory[]) => rate(ts, (t) => t.turns[0]?.tool !== undefined);
  report.push(`math: h0 success ${success(h0).toFixed(2)} tool ${toolUse(h0).toFixed(2)}; reference success ${success(ref).toFixed(2)} tool ${toolUse(ref).toFixed(2)}`);
  assert.ok(toolUse(h0) > 0.15 && toolUse(h0) < 0.35, `h0 tool use ${toolUse(h0)}`);
  assert.ok(toolUse(ref) > 0.7, `reference tool use ${toolUse(ref)}`);
  assert.ok(success(h0) > 0.2 && success(h0) < 0.5 && success(ref) > success(h0) + 0.2, report.at(-1));
  const again = await rollout('math', readSeedHarness('math'), mathTeacher() as TeacherPolicy<never>, 2);
  assert.deepEqual(again.map((t) => t.messages), h0.map((t) => t.messages));
});

test('search QA teacher: searching pays off only when the harness shows enough of the passages', async () => {
  const inst = getDomain('search-qa').load({ kind: 'synthetic' });
  const policy = createTeacher('search-qa', inst) as TeacherPolicy<never>;
  const h0 = await rollout('search-qa', readSeedHarness('search-qa'), policy, 2);
  const ref = await rollout('search-qa', readReferenceHarness('search-qa'), policy, 2);
  const searched = (ts: Trajectory[]) => rate(ts, (t) => t.turns[0]?.tool !== undefined);
  const winWhenSearched = (ts: Trajectory[]) => success(ts.filter((t) => t.turns[0]?.tool !== undefined));
  report.push(`search-qa: h0 success ${success(h0).toFixed(2)} search ${searched(h0).toFixed(2)} (success when searching ${winWhenSearched(h0).toFixed(2)}); reference success ${success(ref).toFixed(2)} search ${searched(ref).toFixed(2)} (${winWhenSearched(ref).toFixed(2)})`);
  assert.ok(success(h0) > 0.05 && success(h0) < 0.4, report.at(-1));
  assert.ok(winWhenSearched(ref) > winWhenSearched(h0) + 0.25, report.at(-1));
  assert.ok(success(ref) > success(h0) + 0.25, report.at(-1));
});

test('chess teacher: the legal-move list (a harness lever) is what the listed-move choice needs', async () => {
  const h0 = await rollout('chess', readSeedHarness('chess'), chessTeacher() as TeacherPolicy<never>, 3);
  const ref = await rollout('chess', readReferenceHarness('chess'), chessTeacher() as TeacherPolicy<never>, 3);
  const illegalEnd = (ts: Trajectory[]) => rate(ts, (t) => t.stopReason === 'illegal-actions');
  report.push(`chess: h0 success ${success(h0).toFixed(2)} (ended on illegal moves ${illegalEnd(h0).toFixed(2)}); reference success ${success(ref).toFixed(2)} (${illegalEnd(ref).toFixed(2)})`);
  assert.ok(success(h0) > 0 && success(h0) < 0.15, report.at(-1));
  assert.ok(success(ref) > success(h0) + 0.1, report.at(-1));
  assert.ok(illegalEnd(h0) > illegalEnd(ref), report.at(-1));
});

test('teacher rates (printed for reports)', () => {
  for (const line of report) console.log(line);
  assert.equal(report.length, 3);
});
