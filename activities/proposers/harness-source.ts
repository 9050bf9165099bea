// Reading and editing harness source text through TypeScript's AST: find the default-exported harness
// object, read its literal config values, replace a property's initializer, add hook methods, and compare
// two harnesses with the two prompt strings blanked out (the prompt-only rule). Edits are span
// replacements, so everything the edit does not touch stays byte-identical.
import ts from 'typescript';

export interface PropertySpan {
  name: string;
  /** The whole property (for hooks: the method declaration). */
  start: number;
  end: number;
  /** The initializer's span (property assignments only). */
  init: ts.Expression | null;
}

export interface HarnessSourceInfo {
  sourceFile: ts.SourceFile;
  object: ts.ObjectLiteralExpression;
  properties: Map<string, PropertySpan>;
  hooksObject: ts.ObjectLiteralExpression | null;
  hookNames: string[];
  /** The object has a declared type (annotation, `satisfies` or `as`), so hook parameters are typed from it. */
  typed: boolean;
}

function propName(p: ts.ObjectLiteralElementLike, sf: ts.SourceFile): string | null {
  if (!p.name) return null;
  if (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) return p.name.text;
  return p.name.getText(sf);
}

/** The object literal the module default-exports (directly, or through a `const` it names). */
function findExportedObject(sf: ts.SourceFile): { object: ts.ObjectLiteralExpression; typed: boolean } | null {
  let exported: ts.Expression | null = null;
  for (const st of sf.statements) if (ts.isExportAssignment(st) && !st.isExportEquals) exported = st.expression;
  if (!exported) return null;
  let typed = false;
  const unwrap = (e: ts.Expression): ts.Expression => {
    if (ts.isSatisfiesExpression(e) || ts.isAsExpression(e)) typed = true;
    return ts.isSatisfiesExpression(e) || ts.isAsExpression(e) || ts.isParenthesizedExpression(e) ? unwrap(e.expression) : e;
  };
  exported = unwrap(exported);
  if (ts.isObjectLiteralExpression(exported)) return { object: exported, typed };
  if (!ts.isIdentifier(exported)) return null;
  const name = exported.text;
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st)) continue;
    for (const d of st.declarationList.declarations) {
      if (ts.isIdentifier(d.name) && d.name.text === name && d.initializer) {
        typed = d.type !== undefined;
        const init = unwrap(d.initializer);
        if (ts.isObjectLiteralExpression(init)) return { object: init, typed };
      }
    }
  }
  return null;
}

/** Parses a harness file; null when its default export is not an object literal this module can edit. */
export function parseHarnessSource(source: string): HarnessSourceInfo | null {
  const sourceFile = ts.createSourceFile('harness.ts', source, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const found = findExportedObject(sourceFile);
  if (!found) return null;
  const { object, typed } = found;
  const properties = new Map<string, PropertySpan>();
  for (const p of object.properties) {
    const name = propName(p, sourceFile);
    if (name === null) continue;
    properties.set(name, { name, start: p.getStart(sourceFile), end: p.getEnd(), init: ts.isPropertyAssignment(p) ? p.initializer : null });
  }
  const hooksInit = properties.get('hooks')?.init ?? null;
  const hooksObject = hooksInit && ts.isObjectLiteralExpression(hooksInit) ? hooksInit : null;
  const hookNames = hooksObject ? hooksObject.properties.map((p) => propName(p, sourceFile)).filter((n): n is string => n !== null) : [];
  return { sourceFile, object, properties, hooksObject, hookNames, typed };
}

export type LiteralValue = string | number | boolean | null | LiteralValue[] | { [k: string]: LiteralValue };

/** Evaluates a literal expression (strings, numbers, booleans, arrays, objects); undefined otherwise. */
export function literalValue(e: ts.Expression | null): LiteralValue | undefined {
  if (!e) return undefined;
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return e.text;
  if (ts.isNumericLiteral(e)) return Number(e.text);
  if (ts.isPrefixUnaryExpression(e) && e.operator === ts.SyntaxKind.MinusToken && ts.isNumericLiteral(e.operand)) return -Number(e.operand.text);
  if (e.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (e.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (e.kind === ts.SyntaxKind.NullKeyword) return null;
  if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) return literalValue(e.expression);
  if (ts.isArrayLiteralExpression(e)) {
    const out: LiteralValue[] = [];
    for (const el of e.elements) {
      const v = literalValue(el);
      if (v === undefined) return undefined;
      out.push(v);
    }
    return out;
  }
  if (ts.isObjectLiteralExpression(e)) {
    const out: { [k: string]: LiteralValue } = {};
    for (const p of e.properties) {
      if (!ts.isPropertyAssignment(p)) return undefined;
      const name = ts.isIdentifier(p.name) || ts.isStringLiteral(p.name) ? p.name.text : null;
      const v = literalValue(p.initializer);
      if (name === null || v === undefined) return undefined;
      out[name] = v;
    }
    return out;
  }
  return undefined;
}

/** The literal config values of a harness (each field undefined when not a plain literal). */
export interface LiteralConfig {
  name?: string;
  systemPrompt?: string;
  userTemplate?: string;
  maxTurns?: number;
  retryBudgets?: { formatErrors: number; illegalActions: number };
  toolParams?: Record<string, Record<string, number>>;
}

export function readLiteralConfig(info: HarnessSourceInfo): LiteralConfig {
  const get = (k: string) => literalValue(info.properties.get(k)?.init ?? null);
  const out: LiteralConfig = {};
  const name = get('name');
  if (typeof name === 'string') out.name = name;
  const sp = get('systemPrompt');
  if (typeof sp === 'string') out.systemPrompt = sp;
  const ut = get('userTemplate');
  if (typeof ut === 'string') out.userTemplate = ut;
  const mt = get('maxTurns');
  if (typeof mt === 'number') out.maxTurns = mt;
  const rb = get('retryBudgets');
  if (rb && typeof rb === 'object' && !Array.isArray(rb) && typeof rb.formatErrors === 'number' && typeof rb.illegalActions === 'number') {
    out.retryBudgets = { formatErrors: rb.formatErrors, illegalActions: rb.illegalActions };
  }
  const tp = get('toolParams');
  if (tp && typeof tp === 'object' && !Array.isArray(tp)) {
    const params: Record<string, Record<string, number>> = {};
    let ok = true;
    for (const [tool, v] of Object.entries(tp)) {
      if (!v || typeof v !== 'object' || Array.isArray(v)) ok = false;
      else {
        params[tool] = {};
        for (const [k, n] of Object.entries(v)) if (typeof n === 'number') params[tool][k] = n; else ok = false;
      }
    }
    if (ok) out.toolParams = params;
  }
  return out;
}

/** A TypeScript single-quoted string literal for any string. */
export function tsString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t')}'`;
}

/** A TypeScript literal for plain data (single-quoted strings, unquoted safe keys). */
export function tsLiteral(v: LiteralValue): string {
  if (typeof v === 'string') return tsString(v);
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tsLiteral).join(', ')}]`;
  const entries = Object.entries(v).map(([k, x]) => `${/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : tsString(k)}: ${tsLiteral(x)}`);
  return entries.length ? `{ ${entries.join(', ')} }` : '{}';
}

export interface SourceEdit {
  start: number;
  end: number;
  text: string;
}

/** Applies non-overlapping edits (any order). */
export function applyEdits(source: string, edits: SourceEdit[]): string {
  const sorted = [...edits].sort((a, b) => b.start - a.start);
  for (let i = 1; i < sorted.length; i++) if (sorted[i].end > sorted[i - 1].start) throw new Error('overlapping source edits');
  let out = source;
  for (const e of sorted) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/** An edit replacing one config property's initializer; null when the property is missing. */
export function replaceInitializer(info: HarnessSourceInfo, property: string, text: string): SourceEdit | null {
  const init = info.properties.get(property)?.init;
  if (!init) return null;
  return { start: init.getStart(info.sourceFile), end: init.getEnd(), text };
}

/** An edit that adds hook methods (full method text each) to the hooks object. */
export function addHooks(info: HarnessSourceInfo, methods: string[]): SourceEdit | null {
  if (!info.hooksObject || methods.length === 0) return null;
  const obj = info.hooksObject;
  const body = methods.join(',\n');
  if (obj.properties.length === 0) {
    return { start: obj.getStart(info.sourceFile), end: obj.getEnd(), text: `{\n${indent(body, 4)},\n  }` };
  }
  const last = obj.properties[obj.properties.length - 1];
  return { start: last.getEnd(), end: last.getEnd(), text: `,\n${indent(body, 4)}` };
}

export function indent(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return text.split('\n').map((l) => (l.length ? pad + l : l)).join('\n');
}

/**
 * The source printed without comments and with the two prompt strings' initializers blanked: equal for
 * two harnesses exactly when they differ at most in systemPrompt and userTemplate.
 */
export function withoutPromptStrings(source: string): string | null {
  const info = parseHarnessSource(source);
  if (!info) return null;
  const edits = ['systemPrompt', 'userTemplate'].map((p) => replaceInitializer(info, p, "''")).filter((e): e is SourceEdit => e !== null);
  const blanked = applyEdits(source, edits);
  const sf = ts.createSourceFile('h.ts', blanked, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  return ts.createPrinter({ removeComments: true }).printFile(sf);
}
