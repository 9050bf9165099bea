// Chess rule helpers over chess.js, in UCI notation only. The environment never shows SAN: chess.js SAN
// marks mates with '#', which would leak the reward; the visible list marks every check (mates included)
// with the same leading '+' (legalUciMovesMarked), so a mate looks like any other check. Also: solution search helpers
// (mating moves, unique mate-in-2 first moves) used by the puzzle generator and its tests.
import { Chess, type Move } from 'chess.js';
import { fastLegalUci, fastLegalUciMarked } from './fast-search';

export const UCI_PATTERN = /^[a-h][1-8][a-h][1-8][qrbn]?$/;

export function toUci(m: Pick<Move, 'from' | 'to' | 'promotion'>): string {
  return `${m.from}${m.to}${m.promotion ?? ''}`;
}

/**
 * Legal moves in UCI, sorted (a stable order that carries no hint about which move is good). Uses the
 * SAN-free internal move generator: the environment lists moves on every observation, and the public
 * API's SAN work made that the cost of a chess rollout. tests/domains/chess.test.ts checks both agree.
 */
export function legalUciMoves(chess: Chess): string[] {
  return fastLegalUci(chess);
}

/**
 * The sorted list with marks (the environment shows the checks first): a move that gives check carries a
 * leading '+' ('+h5f7'; a mating move too, never '#': mates must look like any other check). Leading, not trailing as in SAN: a
 * causal byte-level model decides on a move at its first character, so a mark it must prefer has to come
 * before the move (copying '+' then the move after it is plain induction; a trailing mark is seen only
 * after the choice). normalizeMoveText strips the mark.
 */
export function legalUciMovesMarked(chess: Chess): string[] {
  return fastLegalUciMarked(chess);
}

/** The same list through the public API (reference for tests). */
export function publicLegalUciMoves(chess: Chess): string[] {
  return chess.moves({ verbose: true }).map(toUci).sort();
}

/** Plays a UCI move if legal; returns false (and leaves the position unchanged) otherwise. */
export function playUci(chess: Chess, uci: string): boolean {
  if (!UCI_PATTERN.test(uci)) return false;
  try {
    chess.move({ from: uci.slice(0, 2), to: uci.slice(2, 4), promotion: uci.length === 5 ? uci[4] : undefined });
    return true;
  } catch {
    return false;
  }
}

/** Position identity for splits and dedup: the FEN without the move counters. */
export function positionKey(fen: string): string {
  return fen.split(' ').slice(0, 4).join(' ');
}

/** UCI moves that checkmate at once. */
export function matingMoves(chess: Chess): string[] {
  const out: string[] = [];
  for (const m of chess.moves({ verbose: true })) {
    chess.move(m);
    if (chess.isCheckmate()) out.push(toUci(m));
    chess.undo();
  }
  return out.sort();
}

function hasMateInOne(chess: Chess): boolean {
  for (const m of chess.moves({ verbose: true })) {
    chess.move(m);
    const mate = chess.isCheckmate();
    chess.undo();
    if (mate) return true;
  }
  return false;
}

/**
 * True when every reply of the opponent (at least one must exist) allows a mate in one.
 * Called with the attacker's first move already played.
 */
function forcesMateNext(chess: Chess): boolean {
  const replies = chess.moves({ verbose: true });
  if (replies.length === 0) return false;
  for (const r of replies) {
    chess.move(r);
    const ok = hasMateInOne(chess);
    chess.undo();
    if (!ok) return false;
  }
  return true;
}

/** First moves that force mate in two (the position itself must have no mate in one for a clean puzzle). */
export function mateInTwoFirstMoves(chess: Chess, limit = 2): string[] {
  const out: string[] = [];
  for (const m of chess.moves({ verbose: true })) {
    chess.move(m);
    const forced = !chess.isCheckmate() && !chess.isDraw() && forcesMateNext(chess);
    chess.undo();
    if (forced) {
      out.push(toUci(m));
      if (out.length >= limit) break;
    }
  }
  return out.sort();
}

/**
 * The defence the environment plays after the attacker's first move in a mate-in-2: the reply that
 * leaves the fewest mating moves (the most testing), ties broken by UCI order; plus one mating answer.
 */
export function principalDefence(chess: Chess, firstMove: string): { reply: string; mate: string } {
  if (!playUci(chess, firstMove)) throw new Error(`principalDefence: ${firstMove} is not legal in ${chess.fen()}`);
  let best: { reply: string; mates: string[] } | null = null;
  for (const reply of legalUciMoves(chess)) {
    playUci(chess, reply);
    const mates = matingMoves(chess);
    chess.undo();
    if (best === null || mates.length < best.mates.length) best = { reply, mates };
  }
  chess.undo();
  if (best === null || best.mates.length === 0) throw new Error(`principalDefence: ${firstMove} does not force mate in ${chess.fen()}`);
  return { reply: best.reply, mate: best.mates[0] };
}

/** 8 lines of 8 characters, rank 8 first: letters for pieces (upper case white), '.' for empty squares. */
export function compactBoard(chess: Chess): string {
  return chess
    .board()
    .map((row) => row.map((sq) => (sq === null ? '.' : sq.color === 'w' ? sq.type.toUpperCase() : sq.type)).join(''))
    .join('\n');
}
