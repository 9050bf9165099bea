// Loaders for real-format search QA data: NQ/HotpotQA-style question JSONL and a corpus JSONL
// (BEIR/Pyserini-style documents). Malformed lines are reported with file and line number and
// skipped (counted and listed) or rejected, as the caller configures.
import { loadLines, parseJsonObject, type LoadOptions, type LoadResult } from '../common/line-loader';
import { sha256Hex } from '../../common/hash';
import { normalizeTextAnswer } from '../common/normalize';
import type { CorpusDoc, QaTask } from './corpus';

/**
 * Question lines: {"question": str, "answer": str | str[]} (NQ-open, HotpotQA) or {"answers": str[]};
 * optional "id" or "_id"; optional "entity" naming the underlying item the splits are disjoint by
 * (without it the item is the normalised question text, so duplicated questions never straddle splits).
 * Optional "type" / "level" (HotpotQA) are kept as public meta.
 */
export function parseQuestionLine(line: string, lineNo: number, sourceName: string): QaTask | { malformed: string } {
  const parsed = parseJsonObject(line);
  if (!parsed.ok) return { malformed: parsed.malformed };
  const obj = parsed.value;
  const question = obj.question;
  if (typeof question !== 'string' || question.trim() === '') return { malformed: 'missing "question" string' };
  const rawAnswers = obj.answers ?? obj.answer;
  const answers = typeof rawAnswers === 'string' ? [rawAnswers] : rawAnswers;
  if (!Array.isArray(answers) || answers.length === 0 || !answers.every((a): a is string => typeof a === 'string' && normalizeTextAnswer(a) !== '')) {
    return { malformed: 'missing "answer" (string or non-empty list of non-empty strings)' };
  }
  const rawId = obj.id ?? obj._id;
  const id = typeof rawId === 'string' || typeof rawId === 'number' ? String(rawId) : `line${lineNo}`;
  const entity = typeof obj.entity === 'string' && obj.entity !== '' ? obj.entity : null;
  const meta: Record<string, string | number> = { source: sourceName };
  for (const k of ['type', 'level'] as const) if (typeof obj[k] === 'string') meta[k] = obj[k] as string;
  return {
    id: `search-qa/${sourceName}/${id}`,
    itemId: entity !== null ? `entity:${entity}` : `q:${sha256Hex(normalizeTextAnswer(question))}`,
    question: question.trim(),
    hidden: { answers: answers.slice() },
    view: meta,
  };
}

/** Corpus lines: {"id" | "_id": str, "title"?: str, "text" | "contents": str}. */
export function parseCorpusLine(line: string): CorpusDoc | { malformed: string } {
  const parsed = parseJsonObject(line);
  if (!parsed.ok) return { malformed: parsed.malformed };
  const obj = parsed.value;
  const rawId = obj.id ?? obj._id;
  if (typeof rawId !== 'string' && typeof rawId !== 'number') return { malformed: 'missing "id" (or "_id")' };
  const text = obj.text ?? obj.contents;
  if (typeof text !== 'string' || text.trim() === '') return { malformed: 'missing "text" (or "contents") string' };
  const title = typeof obj.title === 'string' ? obj.title : '';
  return { id: String(rawId), title, text };
}

export function loadQuestionsJsonl(file: string, options: LoadOptions & { sourceName?: string }): LoadResult<QaTask> {
  const source = options.sourceName ?? 'file';
  const result = loadLines(file, (line, n) => parseQuestionLine(line, n, source), options);
  rejectDuplicates(file, result.items.map((t) => t.id), 'question id');
  return result;
}

export function loadCorpusJsonl(file: string, options: LoadOptions): LoadResult<CorpusDoc> {
  const result = loadLines(file, (line) => parseCorpusLine(line), options);
  rejectDuplicates(file, result.items.map((d) => d.id), 'document id');
  return result;
}

function rejectDuplicates(file: string, ids: readonly string[], what: string): void {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) throw new Error(`${file}: duplicate ${what} "${id}"; ids must be unique within a file`);
    seen.add(id);
  }
}
