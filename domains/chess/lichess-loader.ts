// Loader for the Lichess puzzle CSV (PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,
// GameUrl,OpeningTags). FEN is the position before the opponent's move; Moves is UCI and its first move
// is the opponent's, so the task starts after it and the solver plays moves 2, 4, ... Malformed lines
// (bad FEN, illegal or non-UCI moves, a line that ends on an opponent move) are reported with file and
// line number and skipped or rejected as configured.
import { Chess } from 'chess.js';
import { loadLines, type LoadOptions, type LoadResult } from '../common/line-loader';
import { UCI_PATTERN, playUci } from './rules';
import { buildChessTask, lineIsLegal, type ChessTask } from './tasks';

/** Splits one CSV line; handles double-quoted fields with "" escapes. */
export function splitCsvLine(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

function goalOf(themes: string[]): string {
  const mate = themes.map((t) => /^mateIn(\d)$/.exec(t)).find((m) => m !== null);
  return mate ? `mate in ${mate[1]}` : 'find the best move';
}

export function parseLichessLine(line: string): ChessTask | { malformed: string } {
  const f = splitCsvLine(line);
  if (f.length < 3) return { malformed: `expected at least 3 CSV fields (PuzzleId,FEN,Moves), got ${f.length}` };
  const [puzzleId, fen, movesField] = f;
  if (puzzleId.trim() === '') return { malformed: 'empty PuzzleId' };
  const moves = movesField.trim().split(/\s+/);
  if (moves.length < 2 || !moves.every((m) => UCI_PATTERN.test(m))) return { malformed: 'Moves must be at least two UCI moves (opponent first)' };
  if (moves.length % 2 !== 0) return { malformed: "Moves must hold an even number of moves: the opponent's move, then solver/opponent pairs ending with a solver move" };
  let chess: Chess;
  try {
    chess = new Chess(fen);
  } catch (err) {
    return { malformed: `invalid FEN (${err instanceof Error ? err.message : String(err)})` };
  }
  if (!playUci(chess, moves[0])) return { malformed: `opponent move ${moves[0]} is illegal in the FEN` };
  const start = chess.fen();
  const solution = moves.slice(1);
  if (!lineIsLegal(start, solution)) return { malformed: 'solution line contains an illegal move' };
  const rating = Number(f[3]);
  return buildChessTask({
    id: `chess/lichess/${puzzleId.trim()}`,
    fen: start,
    line: solution,
    goal: goalOf((f[7] ?? '').trim().split(/\s+/)),
    lastMove: moves[0],
    rating: Number.isFinite(rating) && f[3] !== undefined && f[3].trim() !== '' ? rating : undefined,
    source: 'lichess',
  });
}

export function loadLichessCsv(file: string, options: LoadOptions): LoadResult<ChessTask> {
  const result = loadLines(file, (line) => parseLichessLine(line), { ...options, header: (first) => /^\s*PuzzleId\s*,/i.test(first) });
  const seen = new Set<string>();
  for (const t of result.items) {
    if (seen.has(t.id)) throw new Error(`${file}: duplicate PuzzleId "${t.id}"; ids must be unique within a file`);
    seen.add(t.id);
  }
  return result;
}
