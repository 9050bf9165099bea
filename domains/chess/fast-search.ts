// Exhaustive mate search for the puzzle generator, on chess.js's internal move API (no SAN). The public
// API computes SAN for every generated move (a make/unmake plus a mate test each), which made a depth-3
// uniqueness check cost ~300 ms per position; the internal calls are ~20x faster. chess.js is pinned at
// 1.4.0 exactly; the internals are checked at first use, and tests cross-check results with the public API.
import { Chess } from 'chess.js';

interface InternalMove {
  from: number;
  to: number;
  promotion?: string;
}
interface ChessInternals {
  _turn: 'w' | 'b';
  _moves(options?: { legal?: boolean }): InternalMove[];
  _makeMove(move: InternalMove): void;
  _undoMove(): unknown;
  _isKingAttacked(color: 'w' | 'b'): boolean;
}

function internals(chess: Chess): ChessInternals {
  const c = chess as unknown as Partial<ChessInternals>;
  if (typeof c._moves !== 'function' || typeof c._makeMove !== 'function' || typeof c._undoMove !== 'function' || typeof c._isKingAttacked !== 'function') {
    throw new Error('fast-search: chess.js internals changed (expected chess.js 1.4.0 exactly); pin chess.js@1.4.0 or port fast-search.ts');
  }
  return c as ChessInternals;
}

function square(sq: number): string {
  return 'abcdefgh'[sq & 15] + String(8 - (sq >> 4));
}

function uciOf(m: InternalMove): string {
  return square(m.from) + square(m.to) + (m.promotion ?? '');
}

function isMate(c: ChessInternals): boolean {
  return c._isKingAttacked(c._turn) && c._moves().length === 0;
}

function hasMateInOne(c: ChessInternals): boolean {
  for (const m of c._moves()) {
    c._makeMove(m);
    const mate = isMate(c);
    c._undoMove();
    if (mate) return true;
  }
  return false;
}

/** Legal moves in UCI, sorted: the same list as the public API gives, without computing SAN for each. */
export function fastLegalUci(chess: Chess): string[] {
  return internals(chess)._moves().map(uciOf).sort();
}

/** Legal moves in UCI, sorted, each move that gives check (mate included) marked by a leading '+'. */
export function fastLegalUciMarked(chess: Chess): string[] {
  const c = internals(chess);
  const out: { uci: string; check: boolean }[] = [];
  for (const m of c._moves()) {
    c._makeMove(m);
    out.push({ uci: uciOf(m), check: c._isKingAttacked(c._turn) });
    c._undoMove();
  }
  return out.sort((a, b) => (a.uci < b.uci ? -1 : a.uci > b.uci ? 1 : 0)).map((m) => (m.check ? `+${m.uci}` : m.uci));
}

/** UCI moves that mate at once, sorted. */
export function fastMatingMoves(chess: Chess): string[] {
  const c = internals(chess);
  const out: string[] = [];
  for (const m of c._moves()) {
    c._makeMove(m);
    if (isMate(c)) out.push(uciOf(m));
    c._undoMove();
  }
  return out.sort();
}

/**
 * First moves that force mate in two: after the move the opponent has at least one reply and every reply
 * allows a mate in one. Stops after `limit` are found (2 suffices to reject a non-unique puzzle).
 */
export function fastMateInTwoFirstMoves(chess: Chess, limit = 2): string[] {
  const c = internals(chess);
  const out: string[] = [];
  for (const m of c._moves()) {
    c._makeMove(m);
    const replies = c._moves();
    let forced = replies.length > 0;
    for (const r of replies) {
      if (!forced) break;
      c._makeMove(r);
      forced = hasMateInOne(c);
      c._undoMove();
    }
    c._undoMove();
    if (forced) {
      out.push(uciOf(m));
      if (out.length >= limit) break;
    }
  }
  return out.sort();
}
