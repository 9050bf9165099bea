// The chess teacher: when the prompt lists legal moves it usually copies one from the list (LIST path:
// the solution with P = solveRate, else a random listed move); otherwise, or by choice, it writes a move
// freehand (FREEHAND: rarely the solution, mostly an invented and often illegal move). Copying from the
// list is the choice RSFT can reinforce, and only a harness can put the list on screen: the two levers
// interact (the list pays off once the weights copy from it).
import type { Rng } from '../common/rng';
import type { TeacherPolicy } from '../common/teacher';
import { Chess } from 'chess.js';
import { playUci, positionKey } from './rules';
import { startFen, type ChessReference, type ChessTask } from './tasks';

export interface ChessTeacherOptions {
  /** P(LIST path) when a list is shown, plain prompt / prompt saying "copy one move". */
  listRatePlain: number;
  listRateAsked: number;
  /** P(the solution move) on the LIST path, and on the FREEHAND path. */
  solveRateList: number;
  solveRateFreehand: number;
}
export const DEFAULT_CHESS_TEACHER: ChessTeacherOptions = { listRatePlain: 0.5, listRateAsked: 0.85, solveRateList: 0.4, solveRateFreehand: 0.1 };

const UCI = /\b[a-h][1-8][a-h][1-8][qrbn]?\b/g;

/** The UCI moves of the most recent message that lists at least three of them (the visible legal list). */
export function visibleMoveList(prompt: string): string[] {
  const messages = prompt.split(/<\|(?:user|tool|system)\|>/);
  for (let i = messages.length - 1; i >= 0; i--) {
    const moves = messages[i].split('<|assistant|>')[0].match(UCI) ?? [];
    if (moves.length >= 3) return moves;
  }
  return [];
}

function freehandMove(rng: Rng): string {
  const sq = (): string => `${'abcdefgh'[rng.int(0, 7)]}${rng.int(1, 8)}`;
  return `${sq()}${sq()}`;
}

/**
 * Where in the solution line the episode is: the later of (a) the most recent FEN the prompt shows,
 * located by replaying the line (harnesses that rewrite the context show only the latest position) and
 * (b) the opponent replies the prompt mentions (h0 names replies but shows no new FEN).
 */
export function plyFromPrompt(task: ChessTask, prompt: string): number {
  const replies = 2 * (prompt.match(/opponent played/g) ?? []).length;
  const fens = [...prompt.matchAll(/FEN: (\S+ [wb] \S+ \S+ \d+ \d+)/g)].map((m) => positionKey(m[1]));
  const last = fens[fens.length - 1];
  if (last === undefined) return replies;
  const chess = new Chess(startFen(task));
  const line = task.hidden.line;
  for (let ply = 0; ply < line.length; ply += 2) {
    if (positionKey(chess.fen()) === last) return Math.max(ply, replies);
    if (!playUci(chess, line[ply]) || (line[ply + 1] !== undefined && !playUci(chess, line[ply + 1]))) break;
  }
  return replies;
}

export function chessTeacher(options: ChessTeacherOptions = DEFAULT_CHESS_TEACHER): TeacherPolicy<ChessReference> {
  return ({ task, prompt, rng }) => {
    const ply = plyFromPrompt(task, prompt);
    const solution = task.hidden.line[ply] ?? task.hidden.line[task.hidden.line.length - 1];
    const listed = visibleMoveList(prompt);
    const asked = /copy one move/i.test(prompt);
    if (listed.length > 0 && rng.chance(asked ? options.listRateAsked : options.listRatePlain)) {
      const move = listed.includes(solution) && rng.chance(options.solveRateList) ? solution : rng.pick(listed);
      return `<answer>${move}</answer>`;
    }
    return `<answer>${rng.chance(options.solveRateFreehand) ? solution : freehandMove(rng)}</answer>`;
  };
}
