// Loader for GSM8K-style JSONL: {"question": str, "answer": "...reasoning... #### 72"}. The reference is
// the number after the last "####" (thousands commas allowed). Malformed lines are reported with file and
// line number, then skipped (counted and listed) or rejected as configured.
import { loadLines, parseJsonObject, type LoadOptions, type LoadResult } from '../common/line-loader';
import { normalizeTextAnswer, parseNumericAnswer } from '../common/normalize';
import { sha256Hex } from '../../common/hash';
import type { MathTask } from './generator';

export function parseGsm8kLine(line: string, lineNo: number, sourceName: string): MathTask | { malformed: string } {
  const parsed = parseJsonObject(line);
  if (!parsed.ok) return { malformed: parsed.malformed };
  const { question, answer } = parsed.value;
  if (typeof question !== 'string' || question.trim() === '') return { malformed: 'missing "question" string' };
  if (typeof answer !== 'string') return { malformed: 'missing "answer" string' };
  const mark = answer.lastIndexOf('####');
  if (mark < 0) return { malformed: 'answer has no "####" followed by the final number' };
  const value = parseNumericAnswer(answer.slice(mark + 4));
  if (value === null) return { malformed: `final answer "${answer.slice(mark + 4).trim()}" after "####" is not a number` };
  const rawId = parsed.value.id;
  const id = typeof rawId === 'string' || typeof rawId === 'number' ? String(rawId) : `line${lineNo}`;
  return {
    id: `math/${sourceName}/${id}`,
    // The problem is the item: the same question text (up to case and punctuation) is one item.
    itemId: `q:${sha256Hex(normalizeTextAnswer(question))}`,
    question: question.trim(),
    view: { source: sourceName },
    hidden: { answer: value },
  };
}

export function loadGsm8kJsonl(file: string, options: LoadOptions & { sourceName?: string }): LoadResult<MathTask> {
  const source = options.sourceName ?? 'file';
  const result = loadLines(file, (line, n) => parseGsm8kLine(line, n, source), options);
  const seen = new Set<string>();
  for (const t of result.items) {
    if (seen.has(t.id)) throw new Error(`${file}: duplicate problem id "${t.id}"; ids must be unique within a file`);
    seen.add(t.id);
  }
  return result;
}
