// The chess teacher: it never reads the solution. When the prompt lists legal moves it usually copies one
// from the list (LIST path), preferring moves marked as checks ('+h5f7'): with P = checkRate the first
// checking move listed (the environment lists checks first, so this is the head of the list: a copy a 1m
// byte model learns, where a check picked from the middle of a 40-move list came back with an invented
// to-square), else a uniformly random listed move. Otherwise, or by
// choice, it writes a move freehand (FREEHAND: an invented and usually illegal move). Its success comes
// only from choices a 1m model can learn and RSFT can reinforce: copy from the visible list, and copy a
// check (every mate is a check, shown with the same '+' as any other check). Only a harness can put the
// list on screen (and re-show it after the opponent's reply, which mate-in-2 needs), and a prompt that asks
// to copy a move / to prefer checks raises both rates: the two levers interact.
import type { Rng } from '../../common/rng';
import type { TeacherPolicy } from '../common/teacher';
import type { ChessReference } from './tasks';

export interface ChessTeacherOptions {
  /** P(LIST path) when a list is shown: plain prompt / prompt saying "copy one move". */
  listRatePlain: number;
  listRateAsked: number;
  /** P(copy a checking move) on the LIST path: plain prompt / prompt saying "prefer checks". */
  checkRatePlain: number;
  checkRateAsked: number;
}
// The plain rates sit well below the asked ones, as math's calculator rate does under h0: a base that
// imitates them leaves both levers room (RSFT under h0 reinforces the copy-a-check choice, a harness that
// asks for it gets it from the prompt). At 0.85 / 0.8 the h0 base already made that choice 80% of the time
// and neither lever moved it.
export const DEFAULT_CHESS_TEACHER: ChessTeacherOptions = { listRatePlain: 0.8, listRateAsked: 0.95, checkRatePlain: 0.45, checkRateAsked: 0.95 };

/** A listed move as shown: UCI, with the environment's leading '+' when it gives check. */
const LISTED = /(?:^|[\s:])(\+?[a-h][1-8][a-h][1-8][qrbn]?)(?=$|[\s.,;<])/g;

/** The moves (as shown, check marks kept) of the most recent message that lists at least three of them. */
export function visibleMoveList(prompt: string): string[] {
  const messages = prompt.split(/<\|(?:user|tool|system)\|>/);
  for (let i = messages.length - 1; i >= 0; i--) {
    const moves = [...messages[i].split('<|assistant|>')[0].matchAll(LISTED)].map((m) => m[1]);
    if (moves.length >= 3) return moves;
  }
  return [];
}

function freehandMove(rng: Rng): string {
  const sq = (): string => `${'abcdefgh'[rng.int(0, 7)]}${rng.int(1, 8)}`;
  return `${sq()}${sq()}`;
}

export function chessTeacher(options: ChessTeacherOptions = DEFAULT_CHESS_TEACHER): TeacherPolicy<ChessReference> {
  return ({ prompt, rng }) => {
    const listed = visibleMoveList(prompt);
    const asked = /copy one move/i.test(prompt);
    if (listed.length > 0 && rng.chance(asked ? options.listRateAsked : options.listRatePlain)) {
      const checks = listed.filter((m) => m.startsWith('+'));
      const preferChecks = /prefer checks/i.test(prompt);
      const move = checks.length > 0 && rng.chance(preferChecks ? options.checkRateAsked : options.checkRatePlain) ? checks[0] : rng.pick(listed);
      return `<answer>${move}</answer>`;
    }
    return `<answer>${freehandMove(rng)}</answer>`;
  };
}
