// Answer normalisation used by the verifiers: SQuAD-style normalised exact match for short text answers,
// and a strict numeric parser for math answers (one number, with tolerated decorations only).

/** Lower-case, unicode-fold, drop punctuation and the articles a/an/the, collapse whitespace. */
export function normalizeTextAnswer(s: string): string {
  return s
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\p{P}\p{S}]/gu, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

export function textAnswersMatch(given: string, references: readonly string[]): boolean {
  const g = normalizeTextAnswer(given);
  return g !== '' && references.some((r) => normalizeTextAnswer(r) === g);
}

const MINUS_SIGNS = /[\u2212\u2012\u2013\u2014\uFE63\uFF0D]/g;

/**
 * Parses a final numeric answer. Accepted decorations: surrounding whitespace, a leading currency sign
 * ($, €, £), unicode minus signs, thousands separators in correct groups of three ("1,000"), a trailing
 * period, a trailing ".0"-style fraction, a trailing percent sign, and LaTeX \boxed{...}. Anything else
 * (two numbers, words, "1,00") is not a number: returns null.
 */
export function parseNumericAnswer(raw: string): number | null {
  let s = raw.normalize('NFKC').trim().replace(MINUS_SIGNS, '-');
  const boxed = /^\\boxed\{(.*)\}$/.exec(s);
  if (boxed) s = boxed[1].trim();
  s = s.replace(/\.$/, '').trim();
  s = s.replace(/%$/, '').trim();
  let sign = '';
  if (s.startsWith('-')) {
    sign = '-';
    s = s.slice(1).trim();
  }
  s = s.replace(/^[$€£]\s*/, '');
  if (sign === '' && s.startsWith('-')) {
    sign = '-';
    s = s.slice(1);
  }
  if (!/^(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$|^\.\d+$/.test(s)) return null;
  const value = Number(sign + s.replace(/,/g, ''));
  return Number.isFinite(value) ? value : null;
}

/** Exact numeric equality after parsing; floats compared with a tiny relative tolerance for 0.1+0.2 noise. */
export function numbersMatch(a: number, b: number): boolean {
  if (a === b) return true;
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}
