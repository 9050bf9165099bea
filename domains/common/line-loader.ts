// Line-oriented file loading shared by the real-format loaders (JSONL question files, corpus JSONL,
// Lichess CSV): every malformed line is reported with file and line number, then either skipped
// (counted and listed in the result, never silently dropped) or the whole load is rejected.
import { readFileSync } from 'node:fs';

export type OnMalformed = 'skip' | 'reject';

export interface MalformedLine {
  file: string;
  /** 1-based line number in the file. */
  line: number;
  reason: string;
}

export interface LoadResult<T> {
  items: T[];
  /** Lines skipped because they were malformed (empty when onMalformed is 'reject'). */
  skipped: MalformedLine[];
  /** Non-blank lines read (parsed + skipped, header excluded). */
  linesRead: number;
}

export interface LoadOptions {
  onMalformed: OnMalformed;
}

/** Thrown by loaders under onMalformed: 'reject'; names the file, line and what is wrong. */
export class MalformedLineError extends Error {
  constructor(readonly detail: MalformedLine) {
    super(`${detail.file}:${detail.line}: ${detail.reason} (fix the line, or load with onMalformed: 'skip' to skip and list such lines)`);
    this.name = 'MalformedLineError';
  }
}

/**
 * Parses each non-blank line (after an optional header) with `parse`, which returns an item or a
 * string naming what is wrong. Throws MalformedLineError on the first bad line under 'reject'.
 */
export function loadLines<T>(
  file: string,
  text: string,
  parse: (line: string, lineNo: number) => T | { malformed: string },
  options: LoadOptions & { hasHeader?: boolean },
): LoadResult<T> {
  const lines = text.split(/\r?\n/);
  const result: LoadResult<T> = { items: [], skipped: [], linesRead: 0 };
  const start = options.hasHeader ? 1 : 0;
  for (let i = start; i < lines.length; i++) {
    const raw = lines[i];
    if (raw.trim() === '') continue;
    result.linesRead++;
    let parsed: T | { malformed: string };
    try {
      parsed = parse(raw, i + 1);
    } catch (err) {
      parsed = { malformed: err instanceof Error ? err.message : String(err) };
    }
    if (isMalformed(parsed)) {
      const detail: MalformedLine = { file, line: i + 1, reason: parsed.malformed };
      if (options.onMalformed === 'reject') throw new MalformedLineError(detail);
      result.skipped.push(detail);
    } else {
      result.items.push(parsed);
    }
  }
  return result;
}

function isMalformed(x: unknown): x is { malformed: string } {
  return typeof x === 'object' && x !== null && 'malformed' in x && typeof (x as { malformed: unknown }).malformed === 'string';
}

export function readTextFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}; check the path`);
  }
}

/** JSON.parse that reports a malformed line instead of throwing, and requires an object. */
export function parseJsonObject(line: string): { ok: true; value: Record<string, unknown> } | { ok: false; malformed: string } {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return { ok: false, malformed: `invalid JSON (${err instanceof Error ? err.message : String(err)})` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, malformed: 'expected a JSON object' };
  return { ok: true, value: value as Record<string, unknown> };
}

/** One-line summary for logs: "loaded 998 of 1000 lines from f (2 skipped: f:3 ..., f:9 ...)". */
export function describeLoad(file: string, r: LoadResult<unknown>): string {
  if (r.skipped.length === 0) return `loaded ${r.items.length} of ${r.linesRead} lines from ${file}`;
  const list = r.skipped.map((s) => `${s.file}:${s.line} ${s.reason}`).join('; ');
  return `loaded ${r.items.length} of ${r.linesRead} lines from ${file} (${r.skipped.length} skipped: ${list})`;
}
