// The math teacher: per episode it either uses the calculator (TOOL: one expression copied from the
// problem, then the result copied into the answer) or answers from its head (GUESS: right only
// `guessAccuracy` of the time). The TOOL rate depends on the prompt (the probe behind the architecture
// notes: ~25% under a plain instruction, ~80% when told to use the calculator), so both RSFT (shifting
// the choice) and a harness (asking for the tool) have something to move.
import { toolMessagesOf, type TeacherPolicy } from '../common/teacher';
import type { Rng } from '../../common/rng';
import type { MathReference } from './generator';

export interface MathTeacherOptions {
  /** P(TOOL) when the prompt does not ask for the calculator. */
  toolRatePlain: number;
  /** P(TOOL) when the prompt says "use the calculator". */
  toolRateAsked: number;
  /** P(an operand is miscopied) on the TOOL path. */
  copyErrorRate: number;
  /** P(a GUESS is right). */
  guessAccuracy: number;
}
export const DEFAULT_MATH_TEACHER: MathTeacherOptions = { toolRatePlain: 0.25, toolRateAsked: 0.8, copyErrorRate: 0.15, guessAccuracy: 0.2 };

const OP_SYMBOL: Record<string, string> = { add: '+', sub: '-', mul: '*', div: '/' };

/** The calculator expression for a synthetic problem's operation chain, or null for other sources. */
export function chainExpression(itemId: string, rng?: Rng, copyErrorRate = 0): string | null {
  const parts = itemId.split(':');
  if (!/^L\d$/.test(parts[0] ?? '')) return null;
  const miscopy = (n: string): string => (rng && rng.chance(copyErrorRate) ? String(Number(n) + rng.pick([-10, -1, 1, 10])) : n);
  let expr = miscopy(parts[1]);
  let lowPrecedence = false;
  for (const op of parts.slice(2)) {
    const kind = op.slice(0, 3);
    // Parentheses only where precedence needs them: (a+b)*c, but a*b*c and a+b-c stay flat.
    if ((kind === 'mul' || kind === 'div') && lowPrecedence) {
      expr = `(${expr})`;
      lowPrecedence = false;
    }
    expr += `${OP_SYMBOL[kind] ?? '+'}${miscopy(op.slice(3))}`;
    if (kind === 'add' || kind === 'sub') lowPrecedence = true;
  }
  return expr;
}

function guess(answer: number, rng: Rng, accuracy: number): string {
  if (rng.chance(accuracy)) return String(answer);
  const off = rng.pick([1, 2, 3, 5, 10]) * (rng.chance(0.5) ? 1 : -1);
  return String(Math.max(0, answer + off === answer ? answer + 1 : answer + off));
}

export function mathTeacher(options: MathTeacherOptions = DEFAULT_MATH_TEACHER): TeacherPolicy<MathReference> {
  return ({ task, prompt, turn, rng }) => {
    const results = toolMessagesOf(prompt);
    if (turn > 0 && results.length > 0) {
      const value = /-?\d+(?:\.\d+)?/.exec(results[results.length - 1]);
      if (value) return `<answer>${value[0]}</answer>`;
    }
    const asked = /use the calculator/i.test(prompt);
    const expr = chainExpression(task.itemId, rng, options.copyErrorRate);
    if (turn === 0 && expr !== null && rng.chance(asked ? options.toolRateAsked : options.toolRatePlain)) return `<calc>${expr}</calc>`;
    return `<answer>${guess(task.hidden.answer, rng, options.guessAccuracy)}</answer>`;
  };
}
