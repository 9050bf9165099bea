// Chess puzzle tasks: the hidden reference (the solution line) and the visible task built from a start
// position, shared by the synthetic source and the Lichess loader. The item a split is disjoint by is the
// position (FEN without move counters).
import { Chess } from 'chess.js';
import type { EnvTask } from '../types';
import { legalUciMoves, positionKey } from './rules';

export interface ChessReference {
  /** Solution in UCI from the start position: solver, opponent, solver, ... ending with a solver move. */
  line: string[];
}
export type ChessTask = EnvTask<ChessReference>;

export interface PuzzleInput {
  id: string;
  fen: string;
  line: string[];
  goal: string;
  /** The opponent's move that led to the position (Lichess puzzles), shown as context. */
  lastMove?: string;
  rating?: number;
  source: string;
}

export function sideToMove(fen: string): 'white' | 'black' {
  return fen.split(' ')[1] === 'b' ? 'black' : 'white';
}

export function buildChessTask(p: PuzzleInput): ChessTask {
  const side = sideToMove(p.fen);
  const title = side === 'white' ? 'White' : 'Black';
  const view: ChessTask['view'] = { source: p.source, fen: p.fen, sideToMove: side, goal: p.goal };
  if (p.lastMove !== undefined) view.lastMove = p.lastMove;
  if (p.rating !== undefined) view.rating = p.rating;
  return {
    id: p.id,
    itemId: positionKey(p.fen),
    question: `${title} to move, ${p.goal}. FEN: ${p.fen}`,
    view,
    hidden: { line: p.line.slice() },
  };
}

/** The start FEN of a task (kept in its view), checked so a hand-made task fails with a clear message. */
export function startFen(task: ChessTask): string {
  const fen = task.view.fen;
  if (typeof fen !== 'string') throw new Error(`chess task ${task.id}: view.fen missing; build tasks with buildChessTask`);
  return fen;
}

/** Normalises a chess answer: case, check/mate/annotation marks, whitespace. Local, so it suits provenance checks. */
export function normalizeMoveText(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/[+#!?]/g, '').replace(/\s+/g, ' ').trim();
}

/** True when the line is legal from the FEN (every move, both sides). */
export function lineIsLegal(fen: string, line: readonly string[]): boolean {
  let chess: Chess;
  try {
    chess = new Chess(fen);
  } catch {
    return false;
  }
  for (const uci of line) {
    if (!legalUciMoves(chess).includes(uci)) return false;
    chess.move({ from: uci.slice(0, 2), to: uci.slice(2, 4), promotion: uci[4] });
  }
  return true;
}
