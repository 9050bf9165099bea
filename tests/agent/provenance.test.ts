// The loop's reward-provenance pieces on their own: the answer span the loop extracts, the comparison up
// to the answer (no grading), and which prompt text counts as a copy of trusted text (no injection).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EpisodeProvenance, extractAnswerSpan, perturbAnswer, sameUpToAnswer, stringLeaves, swapSpan } from '../../agent/provenance';
import { normalizeMoveText } from '../../domains/chess/tasks';
import { normalizeMathText } from '../../domains/math/verifier';

const UCI = /[a-h][1-8][a-h][1-8][qrbn]?/;

void test('span: the whole first <answer> tag; \\boxed{} and a bare token only where listed', () => {
  assert.equal(extractAnswerSpan('so <answer> 22 </answer> <answer>3</answer>', undefined, undefined)?.text, '22');
  assert.equal(extractAnswerSpan('<answer>4+3</answer>', ['boxed', 'token'], /\d+/)?.text, '4+3');
  assert.equal(extractAnswerSpan('it is \\boxed{12}', undefined, undefined), null, 'boxed not listed');
  assert.equal(extractAnswerSpan('\\boxed{1} then \\boxed{\\frac{1}{2}}', ['boxed'], undefined)?.text, '\\frac{1}{2}', 'the last balanced box');
  assert.equal(extractAnswerSpan('I play e2e4 now', undefined, UCI), null, 'token not listed');
  const tok = extractAnswerSpan('e2e4! yes e2e4', ['token'], UCI);
  assert.equal(tok?.text, 'e2e4');
  assert.equal(tok?.ranges.length, 2);
  assert.equal(extractAnswerSpan('e2e4 or d2d4', ['token'], UCI), null, 'two distinct tokens: no span');
  assert.equal(extractAnswerSpan('xe2e4y', ['token'], UCI), null, 'token-bounded only');
});

void test('swap and the comparison up to the answer', () => {
  const span = extractAnswerSpan('Move: e2e4, e2e4', ['token'], UCI)!;
  assert.equal(swapSpan('Move: e2e4, e2e4', span, 'd2d4'), 'Move: d2d4, d2d4');
  const tag = extractAnswerSpan('x <answer>22</answer>', undefined, undefined)!;
  assert.equal(swapSpan('x <answer>22</answer>', tag, '7'), 'x <answer>7</answer>');
  // A harness that only carries the answer along is the same up to the answer; one that grades is not.
  assert.ok(sameUpToAnswer({ action: { kind: 'none', reason: 'you wrote 22' } }, { action: { kind: 'none', reason: 'you wrote 7' } }, ['22', '7']));
  assert.ok(!sameUpToAnswer({ action: { kind: 'none', reason: 'format' } }, { action: { kind: 'answer', answer: '7' } }, ['22', '7']));
  assert.ok(sameUpToAnswer({ s: 'Paris' }, { s: 'london' }, ['paris', 'London']), 'case-insensitive');
  assert.notEqual(perturbAnswer('42'), '42');
  assert.notEqual(perturbAnswer('...'), '...');
});

void test('string leaves: fields of objects (also inside arrays), never bare list elements', () => {
  assert.deepEqual(stringLeaves({ a: 'x', n: 3, list: ['e2e4', 'd2d4'], passages: [{ title: 'T', text: 'body' }] }), ['x', '3', 'T', 'body']);
});

function record(normalize: (s: string) => string, question: string, trusted: string[], prompt: string[]): EpisodeProvenance {
  const p = new EpisodeProvenance(question, normalize);
  p.trust(...trusted);
  p.saw(prompt.map((content) => ({ role: 'user' as const, content })));
  return p;
}

void test('injection: copies of trusted text pass; written, reordered or computed answers do not', () => {
  const list = 'a2a3 +d1h5 b2b3 c2c3 g1f3';
  const tpl = '{question}\nLegal: {legalMovesText}';
  const q = 'White to move. FEN: 8/8/8/8/8/8/8/8 w - - 0 1';
  const n = normalizeMoveText;
  assert.equal(record(n, q, [tpl, list], [`${q}\nLegal: ${list}`]).injection('d1h5'), null, 'the whole list, as the environment wrote it');
  assert.match(record(n, q, [tpl, list], [`${q}\nLegal: d1h5 a2a3 b2b3 c2c3 g1f3`]).injection('d1h5') ?? '', /harness-written prompt text/, 'moved to the front');
  assert.match(record(n, q, [tpl, list], [`${q}\nLegal: d1h5 b2b3 c2c3 g1f3 a2a3`]).injection('d1h5') ?? '', /harness-written/, 'rotated to start at it');
  assert.match(record(n, q, [tpl, list], [`${q}\nBest: d1h5`]).injection('d1h5') ?? '', /harness-written/, 'written by the harness');
  assert.equal(record(n, q, [tpl, list], [`${q}\nLegal: a2a3 +d1h5 b2b3 c2`]).injection('d1h5'), null, 'a cut copy (prefix) is still a copy');
  // A number from the question is fine anywhere; a computed one is not.
  const m = normalizeMathText;
  const mq = 'Ann has 12 pens and buys 7.';
  const num = /-?\d+(?:\.\d+)?/;
  const listed = new EpisodeProvenance(mq, m, num);
  listed.saw([{ role: 'user', content: `${mq}\nNumbers: 12, 7` }]);
  assert.equal(listed.injection('7'), null, "a list of all the question's numbers");
  const singled = new EpisodeProvenance(mq, m, num);
  singled.saw([{ role: 'user', content: `${mq}\nAnswer: <answer>7</answer>` }]);
  assert.match(singled.injection('7') ?? '', /harness-written/, 'one question number singled out');
  assert.match(record(m, mq, [], [`${mq}\nHint: 19`]).injection('19') ?? '', /harness-written/);
  const tool = new EpisodeProvenance(mq, m);
  tool.trustOutput('19');
  tool.saw([{ role: 'user', content: mq }, { role: 'tool', content: 'Result: 19' }]);
  assert.equal(tool.injection('19'), null, 'a trusted tool result (the model wrote the input)');
  const tainted = record(m, mq, [], [mq]);
  tainted.taint('7');
  tainted.saw([{ role: 'tool', content: '7' }]);
  assert.match(tainted.injection('7') ?? '', /computed by a tool on an input the model did not write/, 'even a number that is in the question');
});

void test('injection: text trusted later does not vouch for an earlier prompt (the model copying its own answer)', () => {
  const p = new EpisodeProvenance('Q?', normalizeMathText);
  p.saw([{ role: 'user', content: 'Q?\nAnswer: <answer>41</answer>' }]);
  p.trust('<answer>41</answer>'); // the model's own turn, trusted from now on
  assert.match(p.injection('41') ?? '', /harness-written/);
});
