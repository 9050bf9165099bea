// Binary verifier for math: the final answer must be one number (tolerated decorations: see
// parseNumericAnswer) exactly equal to the reference. The single source of reward for the math domain.
import { numbersMatch, parseNumericAnswer } from '../common/normalize';
import type { Verdict } from '../types';
import type { MathReference } from './generator';

export function verifyMathAnswer(answer: string | null, reference: MathReference): Verdict {
  if (answer === null) return { reward: 0, reason: 'no final answer' };
  const value = parseNumericAnswer(answer);
  if (value === null) return { reward: 0, reason: 'final answer is not a single number' };
  return numbersMatch(value, reference.answer)
    ? { reward: 1, reason: 'numeric match' }
    : { reward: 0, reason: 'wrong number' };
}

const MINUS_SIGNS = /[\u2212\u2012\u2013\u2014\uFE63\uFF0D]/g;

/**
 * Text-level normaliser for the loop's provenance check and for submission: it must give the same result
 * on the answer span and inside the whole generated text, so it only rewrites number decorations locally
 * (unicode minus, currency signs, thousands commas, a trailing ".0" or period after a number, case, spaces).
 */
export function normalizeMathText(text: string): string {
  return text
    .normalize('NFKC')
    .replace(MINUS_SIGNS, '-')
    .replace(/[$€£]/g, '')
    .replace(/(\d),(?=\d{3}(?!\d))/g, '$1')
    .replace(/(\d)\.0+(?!\d)/g, '$1')
    .replace(/(\d)\.(?!\d)/g, '$1')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}
