// Type-checks a harness candidate against the contract types (agent/harness-types.ts) and the helpers'
// declarations, with no Node types in scope: wrong hook signatures, wrong return shapes and host APIs
// show up as violations with line numbers before the candidate ever runs. Runs inside the validator child
// (validator-child.ts), never in a worker: the checker has no limits of its own.
// The compiler host serves only the contract files and the ES2022 lib, parsed once and reused by every
// check; it reads nothing else, so a candidate's `import type ... from '/some/host/file'`,
// `/// <reference path>` or `/// <reference types>` is an unresolved name (a type error), never a read.

import path from 'node:path';
import ts from 'typescript';
import type { HarnessViolation } from '../agent/harness-contract';

const AGENT_DIR = path.resolve(__dirname, '..', 'agent');
const TYPES_FILE = path.join(AGENT_DIR, 'harness-types.ts');
const HELPERS_DECL = path.join(AGENT_DIR, 'whale-helpers.d.ts');
const CANDIDATE = path.join(AGENT_DIR, '__harness_candidate__.ts');
/** Contract imports are resolved by name (any path ending in agent/harness-types or agent/harness-contract). */
const CONTRACT_IMPORT = /(^|\/)agent\/harness-(types|contract)(\.ts)?$/;

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

let served: Map<string, ts.SourceFile> | null = null;

/**
 * The trusted files a candidate may see, parsed once per process: the contract, what it imports, the
 * helpers' declarations and the ES2022 lib files. Sharing parsed files between programs is safe: the
 * checker clones symbols before merging a candidate's augmentations (`declare global`, `declare module`)
 * into them, which is what the language service relies on too.
 */
function contractFiles(): Map<string, ts.SourceFile> {
  if (served) return served;
  const program = ts.createProgram({ rootNames: [TYPES_FILE, HELPERS_DECL], options: OPTIONS, host: ts.createCompilerHost(OPTIONS, true) });
  program.getTypeChecker(); // binds every file once, so no check binds (or half-binds) a shared file
  served = new Map(program.getSourceFiles().map((sf) => [path.resolve(sf.fileName), sf]));
  if (!served.has(TYPES_FILE)) throw new Error(`the contract types ${TYPES_FILE} could not be read`);
  return served;
}

/** Parses the trusted files now (the validator child does this before it reports ready). */
export function preloadContractTypes(): number {
  return contractFiles().size;
}

function candidateHost(source: string): ts.CompilerHost {
  const files = contractFiles();
  const known = (f: string) => path.resolve(f) === CANDIDATE || files.has(path.resolve(f));
  const libDir = path.dirname(ts.getDefaultLibFilePath(OPTIONS));
  const host: ts.CompilerHost = {
    getSourceFile: (f, lang) => (path.resolve(f) === CANDIDATE ? ts.createSourceFile(f, source, lang, true) : files.get(path.resolve(f))),
    getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
    getDefaultLibLocation: () => libDir,
    writeFile: () => undefined,
    getCurrentDirectory: () => AGENT_DIR,
    getCanonicalFileName: (f) => f,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => '\n',
    fileExists: known,
    readFile: (f) => (path.resolve(f) === CANDIDATE ? source : files.get(path.resolve(f))?.text),
    directoryExists: () => false,
    getDirectories: () => [],
    realpath: (f) => f,
    resolveModuleNameLiterals: (literals, containingFile) =>
      literals.map((lit) => {
        if (CONTRACT_IMPORT.test(lit.text)) return { resolvedModule: { resolvedFileName: TYPES_FILE, extension: ts.Extension.Ts, isExternalLibraryImport: false } };
        // The contract's own relative imports resolve among the served files; a candidate gets nothing else.
        if (path.resolve(containingFile) === CANDIDATE) return { resolvedModule: undefined };
        const r = ts.resolveModuleName(lit.text, containingFile, OPTIONS, host);
        return r.resolvedModule && known(r.resolvedModule.resolvedFileName) ? r : { resolvedModule: undefined };
      }),
    resolveTypeReferenceDirectiveReferences: (refs) => refs.map(() => ({ resolvedTypeReferenceDirective: undefined })),
  };
  return host;
}

/**
 * Every type error in the candidate file (errors in the contract's own files are not the author's).
 * `cancel` is polled by the checker between declarations; it throws `ts.OperationCanceledException`.
 */
export function typecheckHarness(source: string, cancel?: ts.CancellationToken): HarnessViolation[] {
  const program = ts.createProgram({ rootNames: [CANDIDATE, HELPERS_DECL], options: OPTIONS, host: candidateHost(source) });
  const sf = program.getSourceFile(CANDIDATE);
  if (!sf) return [{ where: 'type', message: 'internal: the candidate was not part of the program' }];
  // Semantic diagnostics include the file's own processing errors (a `/// <reference>` that is not served).
  return [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf, cancel)].map((d) => {
    const pos = d.file === sf && d.start !== undefined ? sf.getLineAndCharacterOfPosition(d.start) : undefined;
    return { where: 'type', message: ts.flattenDiagnosticMessageText(d.messageText, '\n'), ...(pos ? { line: pos.line + 1, column: pos.character + 1 } : {}) };
  });
}
