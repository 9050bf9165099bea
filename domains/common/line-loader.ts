// Line-oriented file loading shared by the real-format loaders (JSONL question files, corpus JSONL,
// Lichess CSV): every malformed line is reported with file and line number, then either skipped
// (counted and listed in the result, never silently dropped) or the whole load is rejected.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { WhaleError } from '../../common/errors';

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
  /** Stop after this many items (a subset of a large file); all lines by default. */
  limit?: number;
}

/** Thrown by loaders under onMalformed: 'reject'; names the file, line and what is wrong. */
export class MalformedLineError extends WhaleError {
  readonly fault = 'user-input';
  constructor(readonly detail: MalformedLine) {
    super(`${detail.file}:${detail.line}: ${detail.reason} (fix the line, or load with onMalformed: 'skip' to skip and list such lines)`);
    this.name = 'MalformedLineError';
  }
}

/**
 * Parses each non-blank line of a file (after an optional header) with `parse`, which returns an item or
 * `{ malformed: reason }`. Throws MalformedLineError on the first bad line under 'reject'. The file is read
 * in chunks, so real-size files (the Lichess puzzle CSV is ~1 GB) never become one string; `limit` stops
 * after that many items (for taking a subset of a large file).
 */
export function loadLines<T>(
  file: string,
  parse: (line: string, lineNo: number) => T | { malformed: string },
  options: LoadOptions & { header?: (firstLine: string) => boolean },
): LoadResult<T> {
  const result: LoadResult<T> = { items: [], skipped: [], linesRead: 0 };
  let lineNo = 0;
  for (const line of readLines(file)) {
    lineNo++;
    // A UTF-8 byte-order mark (spreadsheet exports) is not part of the first field.
    const raw = lineNo === 1 ? line.replace(/^\uFEFF/, '') : line;
    if (lineNo === 1 && options.header?.(raw)) continue;
    if (raw.trim() === '') continue;
    if (options.limit !== undefined && result.items.length >= options.limit) break;
    result.linesRead++;
    let parsed: T | { malformed: string };
    try {
      parsed = parse(raw, lineNo);
    } catch (err) {
      parsed = { malformed: err instanceof Error ? err.message : String(err) };
    }
    if (isMalformed(parsed)) {
      const detail: MalformedLine = { file, line: lineNo, reason: parsed.malformed };
      if (options.onMalformed === 'reject') throw new MalformedLineError(detail);
      result.skipped.push(detail);
    } else {
      result.items.push(parsed);
    }
  }
  return result;
}

/** The lines of a UTF-8 file without their line endings, read synchronously in 1 MiB chunks. */
export function* readLines(file: string): Generator<string> {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw new Error(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}; check the path`);
  }
  const decoder = new StringDecoder('utf8');
  const buffer = Buffer.alloc(1 << 20);
  let pending = '';
  try {
    for (let n = readSync(fd, buffer, 0, buffer.length, null); n > 0; n = readSync(fd, buffer, 0, buffer.length, null)) {
      pending += decoder.write(buffer.subarray(0, n));
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      for (const p of parts) yield p.endsWith('\r') ? p.slice(0, -1) : p;
    }
    pending += decoder.end();
    if (pending !== '') yield pending.endsWith('\r') ? pending.slice(0, -1) : pending;
  } finally {
    closeSync(fd);
  }
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
