// The math domain's calculator tool: a safe arithmetic evaluator (a recursive-descent parser over a
// whitelisted grammar, never eval or Function). Grammar: numbers, + - * / (also × ÷ x between numbers),
// parentheses, unary minus. Errors are results, not exceptions: a bad expression is a normal observation.

export type CalcResult = { ok: true; value: number; text: string } | { ok: false; error: string };

const MAX_INPUT_CHARS = 200;
const MAX_DEPTH = 32;

type Token = { kind: 'num'; value: number } | { kind: 'op'; value: '+' | '-' | '*' | '/' | '(' | ')' };

function tokenize(input: string): Token[] | string {
  const s = input.normalize('NFKC').replace(/[\u2212\u2013\u2014]/g, '-').replace(/[×xX]/g, '*').replace(/÷/g, '/');
  const tokens: Token[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === ' ' || c === '\t' || c === '\n') {
      i++;
      continue;
    }
    const num = /^(\d+(,\d{3})*(\.\d+)?|\.\d+)/.exec(s.slice(i));
    if (num) {
      tokens.push({ kind: 'num', value: Number(num[0].replace(/,/g, '')) });
      i += num[0].length;
      continue;
    }
    if (c === '+' || c === '-' || c === '*' || c === '/' || c === '(' || c === ')') {
      tokens.push({ kind: 'op', value: c });
      i++;
      continue;
    }
    return `unexpected character "${c}"`;
  }
  return tokens;
}

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): number {
    const v = this.expr(0);
    if (this.pos < this.tokens.length) throw new Error('unexpected text after the expression');
    return v;
  }

  private peekOp(): string | null {
    const t = this.tokens[this.pos];
    return t && t.kind === 'op' ? t.value : null;
  }

  private expr(depth: number): number {
    let v = this.term(depth);
    for (let op = this.peekOp(); op === '+' || op === '-'; op = this.peekOp()) {
      this.pos++;
      const r = this.term(depth);
      v = op === '+' ? v + r : v - r;
    }
    return v;
  }

  private term(depth: number): number {
    let v = this.unary(depth);
    for (let op = this.peekOp(); op === '*' || op === '/'; op = this.peekOp()) {
      this.pos++;
      const r = this.unary(depth);
      if (op === '/' && r === 0) throw new Error('division by zero');
      v = op === '*' ? v * r : v / r;
    }
    return v;
  }

  private unary(depth: number): number {
    if (this.peekOp() === '-') {
      this.pos++;
      return -this.unary(depth);
    }
    if (this.peekOp() === '+') {
      this.pos++;
      return this.unary(depth);
    }
    return this.primary(depth);
  }

  private primary(depth: number): number {
    const t = this.tokens[this.pos];
    if (!t) throw new Error('expression ends too early');
    if (t.kind === 'num') {
      this.pos++;
      return t.value;
    }
    if (t.value === '(') {
      if (depth >= MAX_DEPTH) throw new Error('parentheses nested too deeply');
      this.pos++;
      const v = this.expr(depth + 1);
      if (this.peekOp() !== ')') throw new Error('missing ")"');
      this.pos++;
      return v;
    }
    throw new Error(`unexpected "${t.value}"`);
  }
}

/** Formats a result: integers plainly, other values with up to 6 decimals and no trailing zeros. */
export function formatNumber(v: number): string {
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toFixed(6)));
}

export function evaluateExpression(input: string): CalcResult {
  if (input.length > MAX_INPUT_CHARS) return { ok: false, error: `expression longer than ${MAX_INPUT_CHARS} characters` };
  const tokens = tokenize(input);
  if (typeof tokens === 'string') return { ok: false, error: tokens };
  if (tokens.length === 0) return { ok: false, error: 'empty expression' };
  try {
    const value = new Parser(tokens).parse();
    if (!Number.isFinite(value)) return { ok: false, error: 'result is not a finite number' };
    return { ok: true, value, text: formatNumber(value) };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}
