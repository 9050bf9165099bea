// Seeded multi-step arithmetic word problems. Difficulty level L = number of operations (1-3); each
// problem is a chain start -> op -> op ..., told as short sentences so a small model can copy the
// operands into a calculator call. The underlying item (split key) is the chain itself (level, start
// and every operation with its operand), so two problems that differ only in names are one item.
import { Rng } from '../../common/rng';
import type { EnvTask } from '../types';

export interface MathReference {
  /** The exact final answer. */
  answer: number;
}
export type MathTask = EnvTask<MathReference>;

type Op = 'add' | 'sub' | 'mul' | 'div';

export interface MathGeneratorOptions {
  seed: string;
  /** Problems per difficulty level 1..3. */
  perLevel: number;
}
export const DEFAULT_MATH_OPTIONS: MathGeneratorOptions = { seed: 'whale-math-v1', perLevel: 1000 };

const NAMES = ['Ana', 'Ben', 'Cai', 'Dee', 'Eli', 'Fay', 'Gus', 'Hal', 'Ivy', 'Jon', 'Kim', 'Lou', 'Max', 'Nia', 'Oto', 'Pia'];
const ITEMS = ['apples', 'books', 'coins', 'eggs', 'pens', 'shells', 'stamps', 'cards', 'beads', 'nuts'];

function opSentence(rng: Rng, name: string, op: Op, n: number): string {
  switch (op) {
    case 'add':
      return rng.pick([`${name} gets ${n} more.`, `${name} finds ${n} more.`, `${name} buys ${n} more.`]);
    case 'sub':
      return rng.pick([`${name} gives away ${n}.`, `${name} loses ${n}.`, `${name} sells ${n}.`]);
    case 'mul':
      return `${name} then has ${n} times as many.`;
    case 'div':
      return `${name} splits them into ${n} equal piles and keeps one pile.`;
  }
}

/** Picks an operation and operand that keep the running value a non-negative integer below 10,000. */
function nextStep(rng: Rng, value: number, level: number): { op: Op; n: number } {
  const big = level === 3 ? 199 : 99;
  for (;;) {
    const op = rng.pick<Op>(['add', 'sub', 'mul', 'div']);
    if (op === 'add') return { op, n: rng.int(2, big) };
    if (op === 'sub' && value > 2) return { op, n: rng.int(1, value - 1) };
    if (op === 'mul' && value * 5 < 10_000) return { op, n: rng.int(2, 5) };
    if (op === 'div') {
      const divisors = [2, 3, 4, 5].filter((d) => value % d === 0 && value / d >= 2);
      if (divisors.length > 0) return { op, n: rng.pick(divisors) };
    }
  }
}

function apply(value: number, op: Op, n: number): number {
  return op === 'add' ? value + n : op === 'sub' ? value - n : op === 'mul' ? value * n : value / n;
}

export function generateMathProblems(options: MathGeneratorOptions = DEFAULT_MATH_OPTIONS): MathTask[] {
  const rng = new Rng(options.seed);
  const seen = new Set<string>();
  const tasks: MathTask[] = [];
  for (let level = 1; level <= 3; level++) {
    let made = 0;
    let attempts = 0;
    while (made < options.perLevel) {
      if (++attempts > options.perLevel * 50) throw new Error(`math generator: cannot make ${options.perLevel} distinct level-${level} problems; lower perLevel`);
      const start = rng.int(level === 1 ? 5 : 10, level === 3 ? 199 : 99);
      let value = start;
      const steps: { op: Op; n: number }[] = [];
      for (let s = 0; s < level; s++) {
        const step = nextStep(rng, value, level);
        steps.push(step);
        value = apply(value, step.op, step.n);
      }
      const itemId = `L${level}:${start}:${steps.map((s) => `${s.op}${s.n}`).join(':')}`;
      if (seen.has(itemId)) continue;
      seen.add(itemId);
      const name = rng.pick(NAMES);
      const item = rng.pick(ITEMS);
      const sentences = [`${name} has ${start} ${item}.`, ...steps.map((s) => opSentence(rng, name, s.op, s.n)), `How many ${item} does ${name} have now?`];
      tasks.push({
        id: `math/syn/L${level}-${String(made).padStart(4, '0')}`,
        itemId,
        question: sentences.join(' '),
        view: { source: 'synthetic', level },
        hidden: { answer: value },
      });
      made++;
    }
  }
  return tasks;
}
