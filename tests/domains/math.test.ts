// Math: the generator's problems are well-formed (answers follow from the stated steps), the calculator
// tool and the final answer flow through the environment, and the verifier reads only the final answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mathDomain } from '../../domains/math';
import { evaluateExpression } from '../../domains/math/calculator';
import { DEFAULT_MATH_OPTIONS, generateMathProblems } from '../../domains/math/generator';

const instance = mathDomain.load({ kind: 'synthetic' });
const env = instance.environment;

/** Rebuilds the calculator expression from a problem's item id (its operation chain). */
function chainExpression(itemId: string): string {
  const [, start, ...ops] = itemId.split(':');
  let expr = start;
  for (const op of ops) {
    const n = op.replace(/^[a-z]+/, '');
    const sym = op.startsWith('add') ? '+' : op.startsWith('sub') ? '-' : op.startsWith('mul') ? '*' : '/';
    expr = `(${expr})${sym}${n}`;
  }
  return expr;
}

test('every synthetic answer equals the calculator on its operation chain; values are non-negative integers', () => {
  const all = [...instance.splits.weight, ...instance.splits.harness, ...instance.splits.test];
  assert.equal(all.length, DEFAULT_MATH_OPTIONS.perLevel * 3);
  for (const t of all) {
    const r = evaluateExpression(chainExpression(t.itemId));
    assert.ok(r.ok && r.value === t.hidden.answer, `${t.id}: ${t.itemId} -> ${t.hidden.answer}`);
    assert.ok(Number.isInteger(t.hidden.answer) && t.hidden.answer >= 0);
    assert.ok(t.question.length <= 240, `${t.id} is ${t.question.length} chars`);
    // Each operand the chain uses appears in the text, so copying from the question suffices.
    for (const n of t.itemId.split(':').slice(1).map((x) => x.replace(/^[a-z]+/, ''))) assert.ok(t.question.includes(n), `${t.id} lacks ${n}`);
  }
});

test('difficulty levels 1-3 are all present in every split', () => {
  for (const split of [instance.splits.weight, instance.splits.harness, instance.splits.test]) {
    const levels = new Set(split.map((t) => t.view.level));
    assert.deepEqual([...levels].sort(), [1, 2, 3]);
  }
});

test('generation is deterministic for a seed and different for another', () => {
  const a = generateMathProblems({ seed: 's1', perLevel: 20 });
  assert.deepEqual(a, generateMathProblems({ seed: 's1', perLevel: 20 }));
  assert.notDeepEqual(a, generateMathProblems({ seed: 's2', perLevel: 20 }));
});

test('calc tool results and errors are observations; the answer is final and verified', () => {
  const task = instance.splits.harness[0];
  const s0 = env.initialState(task);
  const good = env.executeTool(task, s0, { tool: 'calc', input: chainExpression(task.itemId), params: {} });
  assert.ok(!(good instanceof Promise) && good.ok);
  assert.equal(good.text, String(task.hidden.answer));
  const bad = env.executeTool(task, good.state, { tool: 'calc', input: 'import("fs")', params: {} });
  assert.ok(!(bad instanceof Promise) && !bad.ok && bad.text.startsWith('error:'));
  assert.equal(bad.state.calls.length, 2);
  assert.deepEqual(s0.calls, []);
  const done = env.submit(task, bad.state, env.normalizeAnswer(good.text));
  assert.equal(done.outcome, 'final');
  assert.equal(env.verify(task, done.state), 1);
  assert.equal(env.verify(task, env.submit(task, s0, String(task.hidden.answer + 1)).state), 0);
  assert.equal(env.verify(task, s0), 0, 'no answer, no reward');
  assert.deepEqual(instance.diagnose(task, done.state), { calculatorCalls: 2, calculatorErrors: 1, calculatorReachedAnswer: true, answered: true });
  assert.ok(!JSON.stringify(env.observe(task, s0)).includes(`"${task.hidden.answer}"`));
});
