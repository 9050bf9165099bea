// Binary verifier for search QA: normalised exact match (case, punctuation, articles, whitespace) of the
// final answer against any reference answer. The single source of reward for RSFT, harness and test scoring.
import { textAnswersMatch } from '../common/normalize';
import type { Verdict } from '../types';
import type { QaReference } from './corpus';

export function verifyQaAnswer(answer: string | null, reference: QaReference): Verdict {
  if (answer === null) return { reward: 0, reason: 'no final answer' };
  return textAnswersMatch(answer, reference.answers)
    ? { reward: 1, reason: 'answer matches a reference after normalisation' }
    : { reward: 0, reason: 'answer does not match any reference' };
}
