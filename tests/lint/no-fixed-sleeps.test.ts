// Guards the rule "no test sleeps for a fixed time to wait for a state": every wait polls for the state with
// a deadline. Scans tests/**/*.ts with the TypeScript parser for fixed sleeps: a promise resolved by a timer
// (`new Promise((r) => setTimeout(r, ms))`), calls of sleep helpers (named sleep/delay, `setTimeout` from
// timers/promises, or any function whose body is such a promise), `Atomics.wait`, and spawning `sleep`.
// Allowed without a note: the interval of a poll inside a loop that checks a deadline. Anything else needs
// an entry in ALLOWED below or a `fixed-sleep-ok: <why>` comment at the call, and the list stays small.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');

/** Legitimate fixed delays that are not waits for a state, each with its justification. */
const ALLOWED: { file: string; call: RegExp; why: string }[] = [
  {
    file: 'testbed/soak-run.ts',
    call: /^sleep\((restartDelayMs|rec\.restartDelayMs|u \* 3000|wait|1000 \+ rng\(\) \* 4000)\)$/,
    why: 'the seeded fault-injection schedule: gaps between kills, moments inside a state and restart delays are the faults injected, not waits for a state',
  },
];
const MAX_ALLOWED_SITES = 12;

export interface Sleep {
  file: string;
  line: number;
  text: string;
  /** Why it is allowed, or null. */
  allowed: string | null;
}

const SLEEP_NAMES = new Set(['sleep', 'delay']);
const isResolverTimer = (node: ts.Node): node is ts.CallExpression =>
  ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'setTimeout' && node.arguments.length >= 1
  && (ts.isIdentifier(node.arguments[0]) || (ts.isArrowFunction(node.arguments[0]) && /^\(?\)?\s*=>\s*\w+\(\s*\)$/.test(node.arguments[0].getText().replace(/^\(\)/, '()'))));

/** A `new Promise(...)` whose executor only arms a timer that resolves it. */
function isTimerPromise(node: ts.Node): boolean {
  if (!ts.isNewExpression(node) || node.expression.getText() !== 'Promise') return false;
  const executor = node.arguments?.[0];
  if (!executor || !(ts.isArrowFunction(executor) || ts.isFunctionExpression(executor))) return false;
  const resolver = executor.parameters[0]?.name.getText();
  let found = false;
  const visit = (n: ts.Node) => {
    if (isResolverTimer(n)) {
      const first = n.arguments[0];
      if ((ts.isIdentifier(first) && first.text === resolver) || (!ts.isIdentifier(first) && first.getText().includes(`${resolver}(`))) found = true;
    }
    ts.forEachChild(n, visit);
  };
  visit(executor.body);
  return found;
}

function insideDeadlineLoop(node: ts.Node): boolean {
  for (let p: ts.Node | undefined = node.parent; p; p = p.parent) {
    if (ts.isFunctionLike(p)) return false;
    if (ts.isWhileStatement(p) || ts.isForStatement(p) || ts.isDoStatement(p)) return /deadline|Date\.now\(\)|performance\.now\(\)/.test(p.getText());
  }
  return false;
}

function markerNear(source: string, line: number): string | null {
  const lines = source.split('\n');
  for (const l of [lines[line - 1], lines[line - 2]]) {
    const m = l?.match(/fixed-sleep-ok:\s*(.{15,})/);
    if (m) return m[1].trim();
  }
  return null;
}

/** Every fixed sleep in one source file. */
export function findSleeps(file: string, source: string): Sleep[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const helpers = new Set(SLEEP_NAMES);
  const out: Sleep[] = [];
  const add = (node: ts.Node, why: string | null) => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    const text = node.getText(sf).replace(/\s+/g, ' ');
    const allowed = why ?? (insideDeadlineLoop(node) ? 'the interval of a poll inside a loop that checks a deadline' : null)
      ?? ALLOWED.find((a) => a.file === file && a.call.test(text))?.why ?? markerNear(source, line);
    out.push({ file, line, text, allowed });
  };
  // First pass: functions whose whole job is to sleep become sleep helpers.
  const collect = (n: ts.Node) => {
    if (ts.isVariableDeclaration(n) && n.initializer && (ts.isArrowFunction(n.initializer) || ts.isFunctionExpression(n.initializer))) {
      const body = n.initializer.body;
      const expr = ts.isBlock(body) ? (body.statements.length === 1 && ts.isReturnStatement(body.statements[0]) ? body.statements[0].expression : undefined) : body;
      if (expr && isTimerPromise(expr)) helpers.add(n.name.getText(sf));
    }
    if (ts.isFunctionDeclaration(n) && n.name && n.body?.statements.length === 1) {
      const st = n.body.statements[0];
      const expr = ts.isReturnStatement(st) ? st.expression : ts.isExpressionStatement(st) && ts.isAwaitExpression(st.expression) ? st.expression.expression : undefined;
      if (expr && isTimerPromise(expr)) helpers.add(n.name.text);
    }
    if (ts.isImportDeclaration(n) && /^(node:)?timers\/promises$/.test((n.moduleSpecifier as ts.StringLiteral).text)) {
      for (const el of (n.importClause?.namedBindings as ts.NamedImports | undefined)?.elements ?? []) helpers.add(el.name.text);
    }
    ts.forEachChild(n, collect);
  };
  collect(sf);
  const visit = (n: ts.Node) => {
    if (isTimerPromise(n)) {
      const decl = n.parent && (ts.isArrowFunction(n.parent) || ts.isReturnStatement(n.parent)) ? n.parent : null;
      // The body of a sleep helper is reported at its calls, not here.
      if (!decl) add(n, null);
    } else if (ts.isCallExpression(n)) {
      const callee = n.expression;
      const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : '';
      const full = callee.getText(sf);
      if (helpers.has(name) && name !== 'setTimeout') add(n, null);
      else if (name === 'setTimeout' && helpers.has('setTimeout') && !ts.isPropertyAccessExpression(callee)) add(n, null);
      else if (full === 'Atomics.wait') add(n, null);
      else if (/^(spawn|spawnSync|exec|execSync|execFile|execFileSync)$/.test(name) && n.arguments[0] && /^['"`]sleep\b/.test(n.arguments[0].getText(sf))) add(n, null);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : testFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

describe('no fixed sleeps in tests', () => {
  it('finds the forms of a fixed sleep, and not timers that are deadlines or strings', () => {
    const found = (src: string) => findSleeps('x.ts', src).map((s) => `${s.line}:${s.allowed ? 'allowed' : 'flagged'}`);
    assert.deepEqual(found('async function f() { await new Promise((r) => setTimeout(r, 100)); }'), ['1:flagged']);
    assert.deepEqual(found('async function f() { await new Promise((resolve) => setTimeout(() => resolve(), 50)); }'), ['1:flagged']);
    assert.deepEqual(found('const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));\nasync function f() { await sleep(5); }'), ['2:flagged']);
    assert.deepEqual(found("import { setTimeout as wait } from 'node:timers/promises';\nasync function f() { await wait(10); }"), ['2:flagged']);
    assert.deepEqual(found('async function f(env: { sleep(ms: number): Promise<void> }) { await env.sleep(1000); }'), ['1:flagged']);
    assert.deepEqual(found("import { spawnSync } from 'node:child_process';\nspawnSync('sleep', ['1']);"), ['2:flagged']);
    assert.deepEqual(found('Atomics.wait(new Int32Array(4), 0, 0, 100);'), ['1:flagged']);
    // A poll interval inside a deadline loop is allowed; so is a marked site.
    assert.deepEqual(found('async function f() { const deadline = Date.now() + 1000; while (Date.now() < deadline) await new Promise((r) => setTimeout(r, 20)); }'), ['1:allowed']);
    assert.deepEqual(found('async function f() {\n  // fixed-sleep-ok: the stall itself is the condition under test\n  await new Promise((r) => setTimeout(r, 200));\n}'), ['3:allowed']);
    // Not sleeps: a timeout that rejects a race, and harness source text in a string.
    assert.deepEqual(found('const t = new Promise((_, rej) => setTimeout(() => rej(new Error("late")), 1000));'), []);
    assert.deepEqual(found("const src = `globalThis['setTimeout'](() => 0, 1); sleep(1)`;"), []);
  });

  it('no test file sleeps for a fixed time to wait for a state', (t) => {
    // The tests, and the process harnesses they share with scripts (testbed/: fault injection, the soak).
    const sleeps = ['tests', 'testbed'].flatMap((d) => testFiles(path.join(ROOT, d))).flatMap((f) => findSleeps(path.relative(ROOT, f), readFileSync(f, 'utf8')));
    const offenders = sleeps.filter((s) => !s.allowed);
    const explicit = sleeps.filter((s) => s.allowed && !s.allowed.startsWith('the interval of a poll'));
    for (const s of sleeps.filter((x) => x.allowed)) t.diagnostic(`allowed ${s.file}:${s.line} ${s.text.slice(0, 80)} — ${s.allowed}`);
    assert.deepEqual(
      offenders.map((s) => `${s.file}:${s.line}: ${s.text.slice(0, 120)}`), [],
      'poll for the state with a deadline instead (waitFor in tests/workflows/env.ts); a delay that is not a wait for a state needs a `fixed-sleep-ok: <why>` comment at the call',
    );
    assert.ok(explicit.length <= MAX_ALLOWED_SITES, `the allow-list must stay small: ${explicit.length} explicitly allowed sites`);
    assert.ok(sleeps.length > 0, 'the scan found no timer at all: it is not looking at the test files');
  });
});
