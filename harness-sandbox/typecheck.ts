// Type-checks a harness candidate against the contract types (agent/harness-types.ts) and the helpers'
// declarations, with no Node types in scope: wrong hook signatures, wrong return shapes and host APIs
// show up as violations with line numbers before the candidate ever runs. Imports of the contract are
// resolved by name (any relative path ending in agent/harness-types or agent/harness-contract), so the
// check does not depend on where the candidate file lives.

import path from 'node:path';
import ts from 'typescript';
import type { HarnessViolation } from '../agent/harness-contract';

const AGENT_DIR = path.resolve(__dirname, '..', 'agent');
const TYPES_FILE = path.join(AGENT_DIR, 'harness-types.ts');
const HELPERS_DECL = path.join(AGENT_DIR, 'whale-helpers.d.ts');
const CANDIDATE = path.join(AGENT_DIR, '__harness_candidate__.ts');

const OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  types: [],
  lib: ['lib.es2022.d.ts'],
};

/** Every type error in the candidate file (errors in the contract's own files are not the author's). */
export function typecheckHarness(source: string): HarnessViolation[] {
  const host = ts.createCompilerHost(OPTIONS, true);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (f) => (path.resolve(f) === CANDIDATE ? source : readFile(f));
  host.fileExists = ((exists) => (f: string) => path.resolve(f) === CANDIDATE || exists(f))(host.fileExists.bind(host));
  host.getSourceFile = (f, lang, onError, create) =>
    path.resolve(f) === CANDIDATE ? ts.createSourceFile(f, source, lang, true) : getSourceFile(f, lang, onError, create);
  host.resolveModuleNameLiterals = (literals, containingFile) =>
    literals.map((lit) => {
      if (/(^|\/)agent\/harness-(types|contract)(\.ts)?$/.test(lit.text)) {
        return { resolvedModule: { resolvedFileName: TYPES_FILE, extension: ts.Extension.Ts, isExternalLibraryImport: false } };
      }
      return ts.resolveModuleName(lit.text, containingFile, OPTIONS, host);
    });
  const program = ts.createProgram({ rootNames: [CANDIDATE, HELPERS_DECL], options: OPTIONS, host });
  const sf = program.getSourceFile(CANDIDATE);
  if (!sf) return [{ where: 'type', message: 'internal: the candidate was not part of the program' }];
  return [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)].map((d) => {
    const pos = d.start !== undefined ? sf.getLineAndCharacterOfPosition(d.start) : undefined;
    return { where: 'type', message: ts.flattenDiagnosticMessageText(d.messageText, '\n'), ...(pos ? { line: pos.line + 1, column: pos.character + 1 } : {}) };
  });
}
