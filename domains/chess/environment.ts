// The chess puzzle environment: the solver submits moves in UCI; a legal correct move is answered by the
// opponent's reply from the solution line; a legal wrong move ends the episode; an illegal or malformed
// move changes nothing (the harness's retry budget decides what happens next). The visible legal-move list
// marks checks with a leading '+' (mates the same way, so no reward leak). Reward 1 only when the whole
// line is played (any mating move counts as correct, as on Lichess). No tools: the harness may format
// the position and legal moves, but never picks a move.
import { Chess } from 'chess.js';
import type { DomainEnvironment, JsonObject, SubmitResult, ToolResult } from '../../agent/environment';
import { compactBoard, legalUciMoves, legalUciMovesMarked, UCI_PATTERN } from './rules';
import { perturbAnswer } from '../../agent/provenance';
import { normalizeMoveText, sideToMove, startFen, type ChessReference, type ChessTask } from './tasks';

export type ChessState = {
  fen: string;
  /** Index into the solution line of the solver's next move. */
  ply: number;
  /** Every legal move the solver played, in order. */
  played: string[];
  /** The opponent's most recent move (the Lichess lead-in move at the start, if any). */
  lastOpponentMove: string | null;
  status: 'playing' | 'solved' | 'failed';
};

/** The visible facts of a position. `legalMoves` is the plain sorted UCI list; `legalMovesText` is the
 * same moves as one string with every checking move marked by a leading '+' (mates too, never '#', so a
 * mate looks like any other check), the checks first (`+d1h5 +h5f7 a2a3 ...`, each group sorted), so a
 * harness's user template can show it with a plain `{legalMovesText}` placeholder (arrays are not
 * filled). Checks first because a byte-level model of the embedded size copies a move reliably from the
 * head of a list and poorly from its middle (it copies the from-square and invents the to-square); the
 * order says which moves give check, as the mark does, and nothing about which one mates. */
function positionData(chess: Chess): JsonObject {
  const marked = legalUciMovesMarked(chess);
  const legalMoves = marked.map((m) => m.replace('+', ''));
  const shown = [...marked.filter((m) => m.startsWith('+')), ...marked.filter((m) => !m.startsWith('+'))];
  return { fen: chess.fen(), sideToMove: chess.turn() === 'w' ? 'white' : 'black', legalMoves, legalMovesText: shown.join(' ') };
}

export function createChessEnvironment(): DomainEnvironment<ChessReference, ChessState> {
  return {
    domain: 'chess',
    tools: [],
    answerKind: 'move',

    initialState(task: ChessTask): ChessState {
      const last = task.view.lastMove;
      return { fen: startFen(task), ply: 0, played: [], lastOpponentMove: typeof last === 'string' ? last : null, status: 'playing' };
    },

    observe(task: ChessTask, state: ChessState): JsonObject {
      const chess = new Chess(state.fen);
      return {
        ...positionData(chess),
        board: compactBoard(chess),
        goal: task.view.goal ?? null,
        movesPlayed: state.played,
        lastOpponentMove: state.lastOpponentMove,
        status: state.status,
      };
    },

    executeTool(_task: ChessTask, state: ChessState): ToolResult<ChessState> {
      return { state, ok: false, text: 'chess has no tools; answer with a move', data: null };
    },

    submit(task: ChessTask, state: ChessState, answer: string): SubmitResult<ChessState> {
      if (state.status !== 'playing') return { state, outcome: 'final', text: 'the puzzle is already over', data: null };
      const move = normalizeMoveText(answer);
      if (!UCI_PATTERN.test(move)) {
        return { state, outcome: 'illegal', text: `"${answer}" is not a move in UCI notation (like e2e4 or e7e8q)`, data: null };
      }
      const chess = new Chess(state.fen);
      if (!legalUciMoves(chess).includes(move)) {
        return { state, outcome: 'illegal', text: `${move} is not a legal move in this position`, data: positionData(chess) };
      }
      const line = task.hidden.line;
      chess.move({ from: move.slice(0, 2), to: move.slice(2, 4), promotion: move[4] });
      const played = [...state.played, move];
      const correct = move === line[state.ply] || chess.isCheckmate();
      if (!correct) {
        const next: ChessState = { ...state, fen: chess.fen(), played, status: 'failed' };
        return { state: next, outcome: 'final', text: `${move} is not the solution; the puzzle is over`, data: null };
      }
      const reply = line[state.ply + 1];
      if (chess.isCheckmate() || reply === undefined) {
        const next: ChessState = { ...state, fen: chess.fen(), played, ply: state.ply + 1, status: 'solved' };
        return { state: next, outcome: 'final', text: `${move} is correct; puzzle solved`, data: null };
      }
      chess.move({ from: reply.slice(0, 2), to: reply.slice(2, 4), promotion: reply[4] });
      const next: ChessState = { fen: chess.fen(), ply: state.ply + 2, played, lastOpponentMove: reply, status: 'playing' };
      return { state: next, outcome: 'continue', text: `${move} is correct; opponent played ${reply}`, data: positionData(chess) };
    },

    normalizeAnswer: normalizeMoveText,
    answerPattern: /[a-h][1-8][a-h][1-8][qrbn]?/,

    alternativeAnswer(task: ChessTask, state: ChessState, answer: string): string {
      const reference = task.hidden.line[state.ply] ?? '';
      const chess = new Chess(state.fen);
      const mates = (m: string): boolean => {
        const c = new Chess(state.fen);
        c.move({ from: m.slice(0, 2), to: m.slice(2, 4), promotion: m[4] });
        return c.isCheckmate();
      };
      const legal = legalUciMoves(chess);
      const right = answer === reference || (legal.includes(answer) && mates(answer));
      if (!right) return reference;
      return legal.find((m) => m !== answer && m !== reference && !mates(m)) ?? perturbAnswer(answer);
    },

    verify(_task: ChessTask, finalState: ChessState): 0 | 1 {
      return finalState.status === 'solved' ? 1 : 0;
    },
  };
}

export { sideToMove };
