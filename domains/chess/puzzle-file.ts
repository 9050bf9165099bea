// The committed synthetic puzzle file (data/chess/synthetic-puzzles.jsonl): one JSON object per line,
// {"id","fen","line","goal"}; its path, serialisation and a strict loader that reports bad lines.
import { join } from 'node:path';
import { loadLines, parseJsonObject, type LoadOptions, type LoadResult } from '../common/line-loader';
import type { SyntheticPuzzle } from './generator';
import { UCI_PATTERN } from './rules';

export const SYNTHETIC_PUZZLES_PATH = join(__dirname, '..', '..', 'data', 'chess', 'synthetic-puzzles.jsonl');

export function serializePuzzle(p: SyntheticPuzzle): string {
  return JSON.stringify({ id: p.id, fen: p.fen, line: p.line, goal: p.goal });
}

export function parsePuzzleLine(line: string): SyntheticPuzzle | { malformed: string } {
  const parsed = parseJsonObject(line);
  if (!parsed.ok) return { malformed: parsed.malformed };
  const { id, fen, line: moves, goal } = parsed.value;
  if (typeof id !== 'string' || typeof fen !== 'string') return { malformed: 'missing "id" or "fen" string' };
  if (!Array.isArray(moves) || moves.length === 0 || !moves.every((m): m is string => typeof m === 'string' && UCI_PATTERN.test(m))) {
    return { malformed: '"line" must be a non-empty list of UCI moves' };
  }
  if (goal !== 'mate in 1' && goal !== 'mate in 2') return { malformed: '"goal" must be "mate in 1" or "mate in 2"' };
  return { id, fen, line: moves, goal };
}

export function loadSyntheticPuzzles(options: LoadOptions, file = SYNTHETIC_PUZZLES_PATH): LoadResult<SyntheticPuzzle> {
  return loadLines(file, parsePuzzleLine, options);
}
