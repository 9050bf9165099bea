// The calculator tool is a safe evaluator: a whitelisted grammar, never eval. These tests pin its
// arithmetic (including a property test against an independent tree evaluator) and its refusals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { evaluateExpression } from '../../domains/math/calculator';

function value(expr: string): number {
  const r = evaluateExpression(expr);
  assert.ok(r.ok, `${expr}: ${r.ok ? '' : r.error}`);
  return r.value;
}

test('precedence, parentheses, unary minus, decimals, commas, unicode operators', () => {
  assert.equal(value('2+3*4'), 14);
  assert.equal(value('(2+3)*4'), 20);
  assert.equal(value('10-4-3'), 3);
  assert.equal(value('100/10/5'), 2);
  assert.equal(value('-3*-2'), 6);
  assert.equal(value('-(2+3)'), -5);
  assert.equal(value('1.5*4'), 6);
  assert.equal(value('1,000+1'), 1001);
  assert.equal(value('6×7'), 42);
  assert.equal(value('84÷2'), 42);
  assert.equal(value('3 x 4'), 12);
  assert.equal(value(' ( 190 + 164 ) * 5 / 2 '), 885);
  const third = evaluateExpression('1/3');
  assert.ok(third.ok && third.text === '0.333333');
});

test('refuses code, bad syntax, division by zero and oversized input with a reason', () => {
  for (const expr of ['process.exit(1)', 'require("fs")', '2**3', '2+', '(2+3', '2+3)', '', '1/0', 'Math.PI', '2;3', '`1`', '(' .repeat(40) + '1' + ')'.repeat(40), '1+'.repeat(150) + '1']) {
    const r = evaluateExpression(expr);
    assert.equal(r.ok, false, `should refuse ${JSON.stringify(expr)}`);
    assert.ok(!r.ok && r.error.length > 0);
  }
});

type Tree = { n: number } | { op: '+' | '-' | '*'; l: Tree; r: Tree };
const treeArb: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ n: fc.integer({ min: 0, max: 999 }) }),
    fc.record({ op: fc.constantFrom<'+' | '-' | '*'>('+', '-', '*'), l: tie('tree'), r: tie('tree') }),
  ),
})).tree;

function show(t: Tree): string {
  return 'n' in t ? String(t.n) : `(${show(t.l)}${t.op}${show(t.r)})`;
}
function evalTree(t: Tree): number {
  if ('n' in t) return t.n;
  const a = evalTree(t.l);
  const b = evalTree(t.r);
  return t.op === '+' ? a + b : t.op === '-' ? a - b : a * b;
}

test('property: fully parenthesised integer expressions evaluate like the tree they print', () => {
  fc.assert(
    fc.property(treeArb, (t) => {
      const expected = evalTree(t);
      fc.pre(Math.abs(expected) < 1e15 && show(t).length <= 200);
      const r = evaluateExpression(show(t));
      return r.ok && r.value === expected;
    }),
    { numRuns: 300 },
  );
});
