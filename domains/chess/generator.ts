// Synthetic chess puzzles: sparse random positions (two kings, a few attackers and defenders), kept only
// when exhaustive search proves a unique solution: mate-in-1 with exactly one mating move, or mate-in-2
// with no mate-in-1 and exactly one first move that forces mate. Puzzle i comes from its own seeded
// stream, so any single puzzle can be regenerated on its own (the committed-data test does exactly that).
import { Chess } from 'chess.js';
import { Rng } from '../../common/rng';
import { fastMateInTwoFirstMoves, fastMatingMoves } from './fast-search';
import { positionKey, principalDefence } from './rules';

export interface SyntheticPuzzle {
  id: string;
  /** Position with the solver to move. */
  fen: string;
  /** Solution line in UCI: solver, opponent, solver, ... (any mating move is accepted as the last one). */
  line: string[];
  goal: 'mate in 1' | 'mate in 2';
}

export interface ChessGeneratorOptions {
  seed: string;
  mateIn1: number;
  mateIn2: number;
}
export const DEFAULT_CHESS_OPTIONS: ChessGeneratorOptions = { seed: 'whale-chess-v1', mateIn1: 1600, mateIn2: 1000 };

const ATTACKERS = ['Q', 'R', 'R', 'B', 'N', 'P'];
const DEFENDERS = ['p', 'p', 'n', 'b', 'r'];

/** A random placement as an 8x8 grid (rank 8 first), or null when the piece could not be placed. */
function randomBoard(rng: Rng): (string | null)[][] {
  const board: (string | null)[][] = Array.from({ length: 8 }, () => Array<string | null>(8).fill(null));
  const place = (p: string, nearEdge: boolean): void => {
    for (let t = 0; t < 50; t++) {
      let r = rng.int(0, 7);
      let f = rng.int(0, 7);
      // Mates happen mostly against a king on the edge; biasing there raises the hit rate several-fold.
      if (nearEdge && rng.chance(0.8)) {
        if (rng.chance(0.6)) r = rng.pick([0, 1]);
        else f = rng.pick([0, 7]);
      }
      if ((p === 'P' || p === 'p') && (r === 0 || r === 7)) continue;
      if (board[r][f] === null) {
        board[r][f] = p;
        return;
      }
    }
  };
  place('k', true);
  place('K', false);
  place(rng.pick(['Q', 'R']), false);
  const extraAttackers = rng.int(0, 2);
  for (let i = 0; i < extraAttackers; i++) place(rng.pick(ATTACKERS), false);
  const defenders = rng.int(0, 3);
  for (let i = 0; i < defenders; i++) place(rng.pick(DEFENDERS), false);
  return board;
}

function boardToFen(board: (string | null)[][], flip: boolean): string {
  const rows = flip
    ? board.slice().reverse().map((row) => row.map((p) => (p === null ? null : p === p.toUpperCase() ? p.toLowerCase() : p.toUpperCase())))
    : board;
  const placement = rows
    .map((row) => {
      let s = '';
      let empty = 0;
      for (const p of row) {
        if (p === null) empty++;
        else {
          if (empty > 0) s += String(empty);
          empty = 0;
          s += p;
        }
      }
      return empty > 0 ? s + String(empty) : s;
    })
    .join('/');
  return `${placement} ${flip ? 'b' : 'w'} - - 0 1`;
}

/** A legal, non-terminal position with the side not to move out of check, or null. */
function candidatePosition(rng: Rng): Chess | null {
  const fen = boardToFen(randomBoard(rng), rng.chance(0.5));
  let chess: Chess;
  try {
    chess = new Chess(fen);
  } catch {
    return null;
  }
  const defender = chess.turn() === 'w' ? 'b' : 'w';
  const king = chess.findPiece({ type: 'k', color: defender })[0];
  if (king === undefined || chess.isAttacked(king, chess.turn())) return null;
  if (chess.isGameOver() || chess.moves().length < 6) return null;
  return chess;
}

export function puzzleKind(index: number, options: ChessGeneratorOptions): SyntheticPuzzle['goal'] {
  return index < options.mateIn1 ? 'mate in 1' : 'mate in 2';
}

/**
 * Puzzle number `index`: the first candidate of its stream that has a unique solution of the wanted kind
 * and whose position is not in `exclude` (positions already used by earlier puzzles).
 */
export function generatePuzzleAt(index: number, options: ChessGeneratorOptions, exclude: ReadonlySet<string>): SyntheticPuzzle {
  const rng = new Rng(`${options.seed}/${index}`);
  const goal = puzzleKind(index, options);
  for (let attempt = 0; attempt < 1_000_000; attempt++) {
    const chess = candidatePosition(rng);
    if (chess === null || exclude.has(positionKey(chess.fen()))) continue;
    const mates = fastMatingMoves(chess);
    const id = `chess/syn/${String(index).padStart(5, '0')}`;
    if (goal === 'mate in 1') {
      if (mates.length === 1) return { id, fen: chess.fen(), line: mates, goal };
      continue;
    }
    if (mates.length > 0) continue;
    const firsts = fastMateInTwoFirstMoves(chess, 2);
    if (firsts.length !== 1) continue;
    const { reply, mate } = principalDefence(chess, firsts[0]);
    return { id, fen: chess.fen(), line: [firsts[0], reply, mate], goal };
  }
  throw new Error(`chess generator: no ${goal} puzzle found for index ${index}; check the position sampler`);
}

export function generateSyntheticPuzzles(options: ChessGeneratorOptions = DEFAULT_CHESS_OPTIONS, onProgress?: (done: number) => void): SyntheticPuzzle[] {
  const out: SyntheticPuzzle[] = [];
  const used = new Set<string>();
  for (let i = 0; i < options.mateIn1 + options.mateIn2; i++) {
    const p = generatePuzzleAt(i, options, used);
    used.add(positionKey(p.fen));
    out.push(p);
    onProgress?.(i + 1);
  }
  return out;
}
