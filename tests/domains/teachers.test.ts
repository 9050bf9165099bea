// Teacher policies through the real agent loop: demonstrations replay exactly from the seeds, and the
// teachers' success depends on both levers the way the embedded model's should: on the choice they make
// (tool / search / listed move) and on what the harness shows (h0 vs the reference harness).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runEpisodes } from '../../agent/loop';
import type { Trajectory } from '../../agent/trajectory';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { chessTeacher, visibleMoveList } from '../../domains/chess/teacher';
import type { ChessTask } from '../../domains/chess/tasks';
import { Rng } from '../../common/rng';
import { readPromptVariant } from '../../training/corpus';
import { decodeTokens } from '../../model/tokenizer';
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

test('chess teacher: never reads the solution; copies listed moves, preferring checks (more so when asked)', async () => {
  const h0 = await rollout('chess', readSeedHarness('chess'), chessTeacher() as TeacherPolicy<never>, 3);
  const asked = await rollout('chess', readPromptVariant('chess'), chessTeacher() as TeacherPolicy<never>, 3);
  const ref = await rollout('chess', readReferenceHarness('chess'), chessTeacher() as TeacherPolicy<never>, 3);
  // First answers: copied from the shown list (as shown, '+' kept) and, among copies, how many are checks.
  const firstAnswers = (ts: Trajectory[]) => ts.map((t) => {
    const user = t.messages.find((m) => m.role === 'user')?.content ?? '';
    const answer = /<answer>([^<]*)<\/answer>/.exec(t.messages.find((m) => m.role === 'assistant')?.content ?? '')?.[1] ?? '';
    return { listed: visibleMoveList(user).includes(answer), check: answer.startsWith('+') };
  });
  const copyRate = (ts: Trajectory[]) => firstAnswers(ts).filter((a) => a.listed).length / ts.length;
  const checkShare = (ts: Trajectory[]) => {
    const copies = firstAnswers(ts).filter((a) => a.listed);
    return copies.filter((a) => a.check).length / copies.length;
  };
  const illegalEnd = (ts: Trajectory[]) => rate(ts, (t) => t.stopReason === 'illegal-actions');
  report.push(`chess: h0 success ${success(h0).toFixed(2)} copy ${copyRate(h0).toFixed(2)} checks ${checkShare(h0).toFixed(2)} (ended on illegal moves ${illegalEnd(h0).toFixed(2)}); asked variant ${success(asked).toFixed(2)} copy ${copyRate(asked).toFixed(2)} checks ${checkShare(asked).toFixed(2)}; reference success ${success(ref).toFixed(2)} (${illegalEnd(ref).toFixed(2)})`);
  // The plain prompt's rates sit well below the asked ones (0.8 / 0.45 against 0.95 / 0.95): the room both
  // levers work in (RSFT under h0 reinforces the copied check; a prompt that asks for it gets it).
  assert.ok(copyRate(h0) > 0.7 && copyRate(h0) < 0.9, report.at(-1));
  assert.ok(checkShare(h0) > 0.35 && checkShare(h0) < 0.6, report.at(-1));
  assert.ok(copyRate(asked) > copyRate(h0) + 0.1 && checkShare(asked) > checkShare(h0) + 0.3, report.at(-1));
  assert.ok(success(h0) > 0.02 && success(h0) < 0.2, report.at(-1));
  assert.ok(success(ref) > success(h0) + 0.05, report.at(-1));
  assert.ok(illegalEnd(h0) > illegalEnd(ref), report.at(-1));
  // No oracle: the same prompt and seed give the same answer whatever the hidden line says.
  const task = getDomain('chess').load({ kind: 'synthetic' }).splits.harness[0] as ChessTask;
  const prompt = decodeTokens(h0[0].modelCalls[0].promptTokens);
  const teacher = chessTeacher();
  for (let i = 0; i < 20; i++) {
    const a = teacher({ task, prompt, turn: 0, rng: new Rng(`s${i}`) });
    const b = teacher({ task: { ...task, hidden: { line: ['a1a2'] } }, prompt, turn: 0, rng: new Rng(`s${i}`) });
    assert.equal(a, b);
  }
});

test('teacher rates (printed for reports)', () => {
  for (const line of report) console.log(line);
  assert.equal(report.length, 3);
});
