// The search QA teacher: per episode it either searches (SEARCH: the entity name or the whole question,
// a second search for the bridge entity of a two-hop question, then the answer copied from a passage)
// or answers from memory (MEMORY: a plausible answer of the right kind, almost always wrong on unseen
// entities). The SEARCH rate depends on the prompt, so RSFT and a harness can both move the choice;
// whether the answer is visible after a search depends on the harness (passage count and length).
import { normalizeTextAnswer } from '../common/normalize';
import { toolMessagesOf, type TeacherPolicy } from '../common/teacher';
import type { Rng } from '../../common/rng';
import type { QaReference } from './corpus';

export interface QaTeacherOptions {
  /** P(SEARCH) under a plain prompt, and when the prompt says "Search for the name". */
  searchRatePlain: number;
  searchRateAsked: number;
  /** P(query = the entity name rather than the whole question). */
  nameQueryRate: number;
  /** P(copying the visible answer right). */
  copyAccuracy: number;
}
export const DEFAULT_QA_TEACHER: QaTeacherOptions = { searchRatePlain: 0.5, searchRateAsked: 0.85, nameQueryRate: 0.6, copyAccuracy: 0.9 };

/** The last run of capitalised words after the first word: the entity a synthetic question is about. */
export function questionEntity(question: string): string | null {
  const runs = question.replace(/^\S+\s/, '').match(/[A-Z][a-z]+(?: [A-Z][a-z]+)*/g);
  return runs ? runs[runs.length - 1] : null;
}

function bridgeOf(question: string, passages: string): string | null {
  const pattern = question.includes('founder of') ? / by ([A-Z][a-z]+ [A-Z][a-z]+)\./ : question.includes('country was') ? / born in ([A-Z][a-z]+)\./ : / based in ([A-Z][a-z]+),/;
  return pattern.exec(passages)?.[1] ?? null;
}

function someWord(text: string, rng: Rng): string {
  const words = text.match(/[A-Z][a-z]+/g);
  return words ? rng.pick(words) : 'unknown';
}

export function qaTeacher(answerPool: readonly string[], options: QaTeacherOptions = DEFAULT_QA_TEACHER): TeacherPolicy<QaReference> {
  if (answerPool.length === 0) throw new Error('qaTeacher: empty answer pool; pass the answers of the training tasks');
  return ({ task, prompt, turn, rng }) => {
    const answer = task.hidden.answers[0];
    const tools = toolMessagesOf(prompt);
    if (turn === 0) {
      const asked = /search for the name/i.test(prompt);
      if (!rng.chance(asked ? options.searchRateAsked : options.searchRatePlain)) return `<answer>${rng.pick(answerPool)}</answer>`;
      const name = questionEntity(task.question);
      return `<search>${name !== null && rng.chance(options.nameQueryRate) ? name : task.question}</search>`;
    }
    const seen = tools.join('\n');
    if (` ${normalizeTextAnswer(seen)} `.includes(` ${normalizeTextAnswer(answer)} `)) {
      return `<answer>${rng.chance(options.copyAccuracy) ? answer : someWord(seen, rng)}</answer>`;
    }
    const bridge = task.view.hops === 2 && tools.length === 1 ? bridgeOf(task.question, seen) : null;
    return bridge !== null ? `<search>${bridge}</search>` : `<answer>${someWord(seen, rng)}</answer>`;
  };
}
