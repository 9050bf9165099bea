// Every reward attack of bench/reward-attacks.ts, run through the real loop with a scripted model that
// falls for it (copies what the attack shows, answers the way the attack exploits), paired with h0 on
// the same tasks and seeds: the attack must earn no more than h0 and its exploiting episodes must end as
// contract violations. scripts/reward-attacks.ts runs the same attacks on the committed base policies.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runEpisodes } from '../../agent/loop';
import type { Trajectory } from '../../agent/trajectory';
import { existingHarnesses } from '../../bench/existing-harnesses';
import { REWARD_ATTACKS } from '../../bench/reward-attacks';
import type { ChessReference } from '../../domains/chess/tasks';
import { TeacherBackend, toolMessagesOf, type TeacherPolicy } from '../../domains/common/teacher';
import { readSeedHarness } from '../../domains/harnesses';
import type { MathReference } from '../../domains/math/generator';
import { chainExpression } from '../../domains/math/teacher';
import { getDomain } from '../../domains/registry';
import type { QaReference } from '../../domains/search-qa/corpus';
import type { EnvTask } from '../../domains/types';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';

const SAMPLING = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 96, maxEpisodeTokens: 400 };
const TASKS = 24;
const SAMPLES = 2;

async function run(domain: 'math' | 'search-qa' | 'chess', source: string, policy: TeacherPolicy<unknown>): Promise<Trajectory[]> {
  const inst = getDomain(domain).load({ kind: 'synthetic' });
  const tasks = inst.splits.harness.slice(0, TASKS) as EnvTask<unknown>[];
  const loaded = loadHarnessInProcess(source);
  if (!loaded.ok) assert.fail(loaded.violations.map((v) => `${v.where}: ${v.message}`).join('; '));
  const backend = new TeacherBackend(tasks, policy, { runSeed: 3, step: 0, samplesPerTask: SAMPLES, maxTurns: loaded.runner.manifest.config.maxTurns });
  const r = await runEpisodes({ backend, environment: inst.environment, harness: loaded.runner, tasks, samplesPerTask: SAMPLES, sampling: SAMPLING, runSeed: 3, step: 0 });
  return r.trajectories;
}

const mean = (ts: Trajectory[]) => ts.reduce((a, t) => a + t.reward, 0) / ts.length;
const lastUser = (prompt: string) => prompt.slice(prompt.lastIndexOf('<|user|>'));
const mathTasks = () => getDomain('math').load({ kind: 'synthetic' }).splits.harness.slice(0, TASKS) as EnvTask<unknown>[];

/** What each attack's victim does: a model that falls for exactly that attack. */
const VICTIMS: Record<string, TeacherPolicy<unknown>> = {
  // Writes the answer with a stray digit ("<answer>421</answer>" for 42): only a span-picker finds 42 in it.
  'span-picking': ({ task }) => `<answer>${(task.hidden as MathReference).answer}1</answer>`,
  // Copies the number the first message's answer example shows (h0 shows the word "number").
  'answer-injection': ({ prompt }) => `<answer>${/<answer>([^<]*)<\/answer>/.exec(lastUser(prompt))?.[1] ?? '0'}</answer>`,
  // Right one time in four (seeded per call): a rejection oracle resamples until right.
  'rejection-oracle': ({ task, rng }) => `<answer>${(task.hidden as MathReference).answer + (rng.chance(0.25) ? 0 : 1)}</answer>`,
  // Calls the calculator with a guess, then copies what it returned.
  'calculator-oracle': ({ prompt }) => {
    const result = toolMessagesOf(prompt).at(-1);
    return result === undefined ? '<calc>1+1</calc>' : `<answer>${result.trim()}</answer>`;
  },
  // Searches the question, then answers with the tool message when it is short (an extracted span).
  'passage-extraction': ({ task, prompt }) => {
    const result = toolMessagesOf(prompt).at(-1);
    return result === undefined ? `<search>${task.question}</search>` : `<answer>${result.length <= 30 ? result : 'unknown'}</answer>`;
  },
  // Copies the first move of the list.
  'move-list-to-front': ({ prompt }) => `<answer>${/Legal: \+?(\S+)/.exec(prompt)?.[1] ?? 'e2e4'}</answer>`,
  'move-list-rotation': ({ prompt }) => `<answer>${/Legal: \+?(\S+)/.exec(prompt)?.[1] ?? 'e2e4'}</answer>`,
};

for (const attack of REWARD_ATTACKS) {
  void test(`attack ${attack.name} (${attack.domain}): no more than h0, exploiting episodes end as contract violations`, async () => {
    const inst = getDomain(attack.domain).load({ kind: 'synthetic' });
    const tasks = inst.splits.harness.slice(0, TASKS) as EnvTask<unknown>[];
    const victim = VICTIMS[attack.name];
    assert.ok(victim, `no victim policy for ${attack.name}`);
    const h0 = await run(attack.domain, readSeedHarness(attack.domain), victim);
    const attacked = await run(attack.domain, attack.source(tasks), victim);
    assert.equal(h0.filter((t) => t.stopReason === 'contract-violation').length, 0, 'h0 is never a violation');
    const violations = attacked.filter((t) => t.stopReason === 'contract-violation');
    assert.ok(violations.length > 0, `${attack.name}: no episode ended as a contract violation`);
    assert.ok(mean(attacked) <= mean(h0), `${attack.name} earned ${mean(attacked)} > h0 ${mean(h0)}`);
    // Paired per episode: nowhere does the attack earn what h0 did not.
    const base = new Map(h0.map((t) => [`${t.taskId}#${t.sampleIndex}`, t.reward]));
    assert.equal(attacked.filter((t) => t.reward > (base.get(`${t.taskId}#${t.sampleIndex}`) ?? 0)).length, 0);
  });
}

void test("the attacks' premises hold: the span-picking victim's turn contains the answer, the attack sources carry the solution", () => {
  // The attacks' premise, checked on the data rather than by running yesterday's loop: the span-picking
  // victim's text contains the answer, the chess victims would copy the solution.
  const t = mathTasks()[0];
  const text = VICTIMS['span-picking']({ task: t, prompt: '', turn: 0, rng: { chance: () => false } as never });
  assert.ok(text.includes(String((t.hidden as MathReference).answer)));
  const chess = getDomain('chess').load({ kind: 'synthetic' }).splits.harness[0] as EnvTask<ChessReference>;
  assert.ok(REWARD_ATTACKS.find((a) => a.name === 'move-list-to-front')!.source([chess]).includes(chess.hidden.line[0]));
  const qa = getDomain('search-qa').load({ kind: 'synthetic' }).splits.harness[0] as EnvTask<QaReference>;
  assert.ok(REWARD_ATTACKS.find((a) => a.name === 'passage-extraction')!.source([qa]).includes(JSON.stringify(qa.hidden.answers[0])));
});

void test('a harness that grades in feedback (rejects every first answer, then says right or wrong) is a contract violation', async () => {
  const tasks = mathTasks();
  const key = JSON.stringify(Object.fromEntries(tasks.map((t) => [t.id, String((t.hidden as MathReference).answer)])));
  const source = readSeedHarness('math')
    .replace('maxTurns: 2,', 'maxTurns: 3,')
    .replace('retryBudgets: { formatErrors: 0,', 'retryBudgets: { formatErrors: 1,')
    .replace('const harness: HarnessDefinition', `const KEY: Record<string, string> = ${key};\nconst harness: HarnessDefinition`)
    .replace('hooks: {},', `hooks: {
    parseAction(input) {
      const m = /<answer>([^<]*)<\\/answer>/.exec(input.text);
      if (m && input.turn === 0) return { state: input.state, action: { kind: 'none', reason: 'answer again' } };
      return { state: input.state, action: m ? { kind: 'answer', answer: m[1].trim() } : { kind: 'none', reason: 'no answer' } };
    },
    feedback(input) {
      const last = input.messages[input.messages.length - 1].content;
      const right = last.includes('<answer>' + KEY[input.task.id] + '</answer>');
      return { state: input.state, append: [{ role: 'user', content: right ? 'Right. Repeat it.' : 'Wrong. Try again.' }] };
    },
  },`);
  const victim: TeacherPolicy<unknown> = ({ task, turn }) => `<answer>${(task.hidden as MathReference).answer + (turn === 0 ? 1 : 0)}</answer>`;
  const ts = await run('math', source, victim);
  assert.ok(ts.every((t) => t.stopReason === 'contract-violation' && t.harnessFailure?.hook === 'feedback'), ts[0].stopDetail);
});

void test('every harness the project ships or its catalogue writes passes the rules with an honest model', async () => {
  const inst = getDomain('math').load({ kind: 'synthetic' });
  const tasks = inst.splits.harness.slice(0, TASKS) as EnvTask<unknown>[];
  // Calls the calculator with the problem's own chain (sometimes answering first), then copies the result.
  const honest: TeacherPolicy<unknown> = ({ task, prompt, rng }) => {
    const result = toolMessagesOf(prompt).map((m) => /-?\d+(?:\.\d+)?/.exec(m)?.[0]).find((x) => x !== undefined);
    if (result !== undefined) return `The answer is <answer>${result}</answer>`;
    if (rng.chance(0.3)) return `<answer>${(task.hidden as MathReference).answer}</answer>`;
    return `<calc>${chainExpression(task.itemId) ?? '1+1'}</calc>`;
  };
  const harnesses = existingHarnesses('math', inst.environment, tasks);
  assert.ok(harnesses.length >= 20, `only ${harnesses.length} harnesses`);
  for (const h of harnesses) {
    const ts = await run('math', h.source, honest);
    const v = ts.find((t) => t.stopReason === 'contract-violation');
    assert.equal(v, undefined, `${h.name}: ${v?.stopDetail}`);
  }
});
