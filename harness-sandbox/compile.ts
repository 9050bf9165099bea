// Turns harness TypeScript into the CommonJS the isolate runs, and statically checks it for what the
// sandbox would refuse anyway (imports outside the allowlist, dynamic import, async hooks, host globals),
// so authors get every problem with a line number instead of one runtime error at a time.
// Why TypeScript's own transpileModule and not esbuild: it is synchronous and in-process (no service
// child), deterministic across platforms, reports syntax errors with positions, and hands us the same
// AST for the static checks; speed does not matter (one compile per candidate, a few milliseconds).
// Untrusted source is compiled only inside the validator child (validator-pool.ts), under its limits.

import { createHash } from 'node:crypto';
import ts from 'typescript';
import type { HarnessViolation } from '../agent/harness-contract';

/** Value imports a harness may use; `import type` from anywhere is erased and always allowed. */
export const ALLOWED_IMPORTS = ['whale:helpers'] as const;

/** Globals that do not exist in the sandbox (or are disabled); using them is a mistake worth flagging early. */
const FORBIDDEN_GLOBALS = new Map<string, string>([
  ['process', 'there is no process in the sandbox'],
  ['require', 'use an `import` from the allowlist (whale:helpers)'],
  ['globalThis', 'harness code may not touch the global object'],
  ['setTimeout', 'hooks are synchronous: no timers'],
  ['setInterval', 'hooks are synchronous: no timers'],
  ['setImmediate', 'hooks are synchronous: no timers'],
  ['queueMicrotask', 'hooks are synchronous: no microtasks'],
  ['fetch', 'no network in the sandbox'],
  ['WebAssembly', 'WebAssembly is removed from the sandbox'],
  ['SharedArrayBuffer', 'SharedArrayBuffer is removed from the sandbox'],
  ['Atomics', 'Atomics is removed from the sandbox'],
  ['eval', 'no eval: write the code directly'],
  ['Function', 'no Function constructor: write the code directly'],
]);

export interface CompiledHarness {
  /** sha256 of the source: the harness's identity in pools, traces and archives. */
  harnessId: string;
  /** CommonJS JavaScript (ES2022) for the isolate. Empty when there are syntax errors. */
  code: string;
  /** Syntax errors and static-check findings, in source order. */
  violations: HarnessViolation[];
  /** True when `violations` contains syntax errors (the code cannot be loaded at all). */
  syntaxErrors: boolean;
}

function at(sf: ts.SourceFile, pos: number): { line: number; column: number } {
  const lc = sf.getLineAndCharacterOfPosition(pos);
  return { line: lc.line + 1, column: lc.character + 1 };
}

export function compileHarness(source: string, fileName = 'harness.ts'): CompiledHarness {
  const harnessId = createHash('sha256').update(source).digest('hex');
  const out = ts.transpileModule(source, {
    fileName,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, strict: true, sourceMap: false, removeComments: false },
  });
  const violations: HarnessViolation[] = [];
  for (const d of out.diagnostics ?? []) {
    const pos = d.file && d.start !== undefined ? at(d.file, d.start) : {};
    violations.push({ where: 'syntax', message: ts.flattenDiagnosticMessageText(d.messageText, '\n'), ...pos });
  }
  const syntaxErrors = violations.length > 0;
  violations.push(...staticViolations(ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2022, true)));
  return { harnessId, code: syntaxErrors ? '' : out.outputText, violations, syntaxErrors };
}

function staticViolations(sf: ts.SourceFile): HarnessViolation[] {
  const found: HarnessViolation[] = [];
  const flag = (node: ts.Node, where: string, message: string) => found.push({ where, message, ...at(sf, node.getStart(sf)) });
  const allowed = (spec: ts.Expression | undefined) => spec !== undefined && ts.isStringLiteral(spec) && (ALLOWED_IMPORTS as readonly string[]).includes(spec.text);

  // Module-level `let` / `var` is mutable state shared by all calls of an isolate; hooks must be pure
  // (an isolate can be reloaded at any time, and replays must not depend on call history).
  for (const stmt of sf.statements) {
    if (ts.isVariableStatement(stmt) && !(stmt.declarationList.flags & ts.NodeFlags.Const)) {
      flag(stmt, 'module-state', 'module-level `let` / `var` is not allowed: hooks are pure; carry what must change from turn to turn in `state`');
    }
  }

  // An explicit stack, not recursion: the parser accepts left-deep chains (`a + b + ...`, `x.y.z...`) far
  // deeper than a recursive walk could follow, and a stack overflow here must not be the author's error.
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && !allowed(node.moduleSpecifier)) {
      flag(node, 'import', `value import from ${node.moduleSpecifier.getText(sf)} is not allowed: use \`import type\` for types; values may come only from ${ALLOWED_IMPORTS.join(', ')}`);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly && !allowed(node.moduleSpecifier)) {
      flag(node, 'import', `re-export from ${node.moduleSpecifier.getText(sf)} is not allowed`);
    } else if (ts.isImportEqualsDeclaration(node)) {
      flag(node, 'import', '`import x = require(...)` is not allowed; use `import` from the allowlist');
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      flag(node, 'import', 'dynamic import() is not allowed: a harness has no module loading at run time');
    } else if ((ts.isFunctionLike(node) && ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)) || ts.isAwaitExpression(node)) {
      flag(node, 'async', 'hooks are synchronous pure functions: no async / await (the host awaits the model, never the harness)');
    } else if ((ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isMethodDeclaration(node)) && node.asteriskToken) {
      flag(node, 'generator', 'generator functions are not allowed in a harness');
    } else if (ts.isIdentifier(node) && FORBIDDEN_GLOBALS.has(node.text) && isFreeReference(node)) {
      flag(node, 'global', `\`${node.text}\` is not available: ${FORBIDDEN_GLOBALS.get(node.text)}`);
    }
  };
  const stack: ts.Node[] = [sf];
  while (stack.length > 0) {
    const node = stack.pop() as ts.Node;
    visit(node);
    const children: ts.Node[] = [];
    ts.forEachChild(node, (c) => void children.push(c));
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return found;
}

/** An identifier used as a value reference (not a property name, declaration name or type). */
function isFreeReference(id: ts.Identifier): boolean {
  const p = id.parent;
  if ((ts.isPropertyAccessExpression(p) && p.name === id) || (ts.isPropertyAssignment(p) && p.name === id)) return false;
  if ((ts.isMethodDeclaration(p) || ts.isPropertyDeclaration(p) || ts.isPropertySignature(p) || ts.isMethodSignature(p)) && p.name === id) return false;
  if ((ts.isVariableDeclaration(p) || ts.isFunctionDeclaration(p) || ts.isParameter(p) || ts.isBindingElement(p)) && p.name === id) return false;
  if (ts.isTypeReferenceNode(p) || ts.isQualifiedName(p) || ts.isImportSpecifier(p) || ts.isExportSpecifier(p)) return false;
  return true;
}
