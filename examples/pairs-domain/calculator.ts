// The pairs domain's calculator: integers, + - * and parentheses, by recursive descent (never eval).
// A bad expression is a result with an error message, not an exception.

export type CalcResult = { ok: true; value: number } | { ok: false; error: string };

export function calculate(input: string): CalcResult {
  const src = input.replace(/\s+/g, '').replace(/[×xX]/g, '*');
  if (src.length === 0) return { ok: false, error: 'empty expression' };
  if (src.length > 100) return { ok: false, error: 'expression longer than 100 characters' };
  let pos = 0;
  const fail = (msg: string): never => {
    throw new SyntaxError(msg);
  };
  const atom = (): number => {
    if (src[pos] === '(') {
      pos++;
      const v = sum();
      if (src[pos] !== ')') fail('missing )');
      pos++;
      return v;
    }
    if (src[pos] === '-') {
      pos++;
      return -atom();
    }
    const m = /^\d{1,9}/.exec(src.slice(pos));
    if (!m) return fail(pos < src.length ? `unexpected "${src[pos]}"` : 'expression ends early');
    pos += m[0].length;
    return Number(m[0]);
  };
  const product = (): number => {
    let v = atom();
    while (src[pos] === '*') {
      pos++;
      v *= atom();
    }
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (src[pos] === '+' || src[pos] === '-') {
      const op = src[pos++];
      v = op === '+' ? v + product() : v - product();
    }
    return v;
  };
  try {
    const value = sum();
    if (pos !== src.length) fail(`unexpected "${src[pos]}"`);
    return { ok: true, value };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}
