// Verifier unit tests with tricky answer formats: the verifiers are the single source of reward, so
// every accepted and rejected decoration is pinned here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkAnswerProvenance } from '../../agent/actions';
import { normalizeTextAnswer, parseNumericAnswer } from '../../domains/common/normalize';
import { normalizeMathText, verifyMathAnswer } from '../../domains/math/verifier';
import { verifyQaAnswer } from '../../domains/search-qa/verifier';

test('math: accepted decorations of the number 1000 / 12 / -5', () => {
  const cases: Array<[string, number]> = [
    ['1000', 1000], ['1,000', 1000], [' 1,000 ', 1000], ['$1,000', 1000], ['1000.', 1000], ['1,000.00', 1000],
    ['12.0', 12], ['$12', 12], ['12.', 12], ['\\boxed{12}', 12], ['１２', 12],
    ['\u22125', -5], ['-5', -5], ['-$5', -5], ['$-5', -5], ['\u20135', -5], ['0.5', 0.5], ['.5', 0.5],
  ];
  for (const [text, value] of cases) {
    assert.equal(parseNumericAnswer(text), value, `parse ${JSON.stringify(text)}`);
    assert.equal(verifyMathAnswer(text, { answer: value }).reward, 1, `verify ${JSON.stringify(text)}`);
  }
});

test('math: rejected answers (not exactly one number, or the wrong number)', () => {
  for (const text of ['1,00', '10,00,000', '12 apples', '12 13', 'twelve', '', '$', '1e3', '12..', '0x10', '12/1']) {
    assert.equal(parseNumericAnswer(text), null, `parse ${JSON.stringify(text)}`);
    assert.equal(verifyMathAnswer(text, { answer: 12 }).reward, 0, `verify ${JSON.stringify(text)}`);
  }
  assert.equal(verifyMathAnswer('13', { answer: 12 }).reward, 0);
  assert.equal(verifyMathAnswer('12.5', { answer: 12 }).reward, 0);
  assert.equal(verifyMathAnswer('-12', { answer: 12 }).reward, 0);
  assert.equal(verifyMathAnswer(null, { answer: 12 }).reward, 0);
});

test('math: the text normaliser keeps provenance and verification consistent', () => {
  const turn = 'The total is <answer>$1,000.</answer>';
  const check = checkAnswerProvenance('$1,000.', turn, normalizeMathText);
  assert.equal(check.ok, true);
  assert.ok(check.ok && verifyMathAnswer(check.normalized, { answer: 1000 }).reward === 1);
  const minus = checkAnswerProvenance('\u22127', 'so <answer>\u22127</answer>', normalizeMathText);
  assert.ok(minus.ok && verifyMathAnswer(minus.normalized, { answer: -7 }).reward === 1);
  assert.equal(normalizeMathText('12.0'), '12');
  assert.equal(normalizeMathText('12.05'), '12.05');
  assert.equal(checkAnswerProvenance('13', 'I think 12', normalizeMathText).ok, false);
});

test('qa: normalised exact match ignores articles, case, punctuation and whitespace', () => {
  const ref = { answers: ['Velora Mills'] };
  for (const text of ['Velora Mills', 'velora mills', 'The Velora Mills.', '  velora   MILLS ', '"Velora Mills"', 'velora-mills', 'a Velora Mills!']) {
    assert.equal(verifyQaAnswer(text, ref).reward, 1, JSON.stringify(text));
  }
  for (const text of ['Velora', 'Velora Mill', 'Mills Velora', 'Velora Mills Inc', '', 'the']) {
    assert.equal(verifyQaAnswer(text, ref).reward, 0, JSON.stringify(text));
  }
  assert.equal(verifyQaAnswer(null, ref).reward, 0);
});

test('qa: any reference answer counts; numbers and unicode are normalised', () => {
  assert.equal(verifyQaAnswer('1912', { answers: ['1912'] }).reward, 1);
  assert.equal(verifyQaAnswer('1912.', { answers: ['1912'] }).reward, 1);
  assert.equal(verifyQaAnswer('Zoë', { answers: ['Zoe', 'ZOË'] }).reward, 1);
  assert.equal(verifyQaAnswer('ＡＢＣ', { answers: ['abc'] }).reward, 1);
  assert.equal(verifyQaAnswer('paris', { answers: ['London', 'Paris, France'] }).reward, 0);
  assert.equal(normalizeTextAnswer('  The  Answer,  is: An apple. '), 'answer is apple');
});

test('property: any decorated integer survives provenance + normalisation + verification', () => {
  const decorate = (n: number, commas: boolean, dollar: boolean, tail: '' | '.' | '.0' | '.00', unicodeMinus: boolean): string => {
    let digits = String(Math.abs(n));
    if (commas) digits = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    const sign = n < 0 ? (unicodeMinus ? '\u2212' : '-') : '';
    return `${sign}${dollar ? '$' : ''}${digits}${tail}`;
  };
  fc.assert(
    fc.property(
      fc.integer({ min: -10_000_000, max: 10_000_000 }),
      fc.boolean(),
      fc.boolean(),
      fc.constantFrom<'' | '.' | '.0' | '.00'>('', '.', '.0', '.00'),
      fc.boolean(),
      fc.constantFrom('', 'So the answer is ', 'Total: '),
      (n, commas, dollar, tail, um, prefix) => {
        const shown = decorate(n, commas, dollar, tail, um);
        const check = checkAnswerProvenance(shown, `${prefix}<answer>${shown}</answer>`, normalizeMathText);
        return parseNumericAnswer(shown) === n && check.ok && verifyMathAnswer(check.normalized, { answer: n }).reward === 1 && verifyMathAnswer(check.normalized, { answer: n + 1 }).reward === 0;
      },
    ),
    { numRuns: 500 },
  );
});
