// Compares a candidate harness with its parent by source: its identity (the source with its name blanked,
// for de-duplication) and whether it changes only constants. The paper's proposer guidance rules out such
// "parameter tuning" candidates, so the built-in proposer drops them unless the run config opts in; the
// judgement looks at the two sources, never at the mechanism that made the candidate.
import ts from 'typescript';
import { applyEdits, parseHarnessSource, replaceInitializer } from './harness-source';

/** A harness's identity for de-duplication: its source with the `name` value blanked (names always differ). */
export function harnessIdentity(source: string): string {
  const info = parseHarnessSource(source);
  const e = info && replaceInitializer(info, 'name', "''");
  return e ? applyEdits(source, [e]) : source;
}

/**
 * The source as a token stream with every number literal masked; comments and whitespace are trivia and
 * never appear. Two harnesses with equal streams differ at most in numbers (and comments, layout).
 */
function maskedTokens(source: string): string[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, /* skipTrivia */ true, ts.LanguageVariant.Standard, source);
  const out: string[] = [];
  // What each open `{` belongs to: a block or object, or a template's `${`, whose `}` continues the template.
  const braces: Array<'brace' | 'template'> = [];
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.CloseBraceToken && braces.pop() === 'template') {
      kind = scanner.reScanTemplateToken(false);
      if (kind === ts.SyntaxKind.TemplateMiddle) braces.push('template');
    } else if (kind === ts.SyntaxKind.OpenBraceToken) {
      braces.push('brace');
    } else if (kind === ts.SyntaxKind.TemplateHead) {
      braces.push('template');
    }
    const masked = kind === ts.SyntaxKind.NumericLiteral || kind === ts.SyntaxKind.BigIntLiteral;
    out.push(masked ? '#' : `${kind}:${scanner.getTokenText()}`);
  }
  return out;
}

/**
 * True when `candidate` differs from `parent` and the only differences are number literals (turn limits,
 * retry budgets, tool parameters, cut lengths, ...). The harness `name` is blanked first (every candidate
 * gets a new one), so a renamed harness with new numbers still counts as constants only.
 */
export function isConstantOnlyChange(parent: string, candidate: string): boolean {
  const a = harnessIdentity(parent);
  const b = harnessIdentity(candidate);
  if (a === b) return false;
  const ta = maskedTokens(a);
  const tb = maskedTokens(b);
  return ta.length === tb.length && ta.every((t, i) => t === tb[i]);
}
