// Guards the rule "no import cycles among the project's own TypeScript files", type-only imports included:
// a type-only edge still ties two modules' designs together, and the next value import turns it into a
// load-order bug. Imports are read with the TypeScript pre-processor and resolved like `tsc` resolves them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Cycles tolerated for now, each an exact set of files (relative to the repository root) and why. Keep it
 * empty: an entry that is no longer a cycle fails the test, so the list only shrinks.
 */
const ALLOWED_CYCLES: { files: string[]; why: string }[] = [];

/** Folders that hold no project source (dependencies, tools, data, outputs). */
const SKIP_DIRS = new Set(['node_modules', 'dist', 'data', 'reports', 'tmp']);

function sourceFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || SKIP_DIRS.has(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && /\.(ts|tsx|mts|cts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(full);
    }
  };
  walk(root);
  return out.sort();
}

/** Every import edge between the project's files: `import`, `import type`, `export ... from`, `import()`, `require()`. */
function importGraph(root: string): Map<string, Set<string>> {
  const options: ts.CompilerOptions = { module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, resolveJsonModule: true, allowJs: false };
  const files = sourceFiles(root);
  const own = new Set(files);
  const graph = new Map<string, Set<string>>();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = new Set<string>();
    for (const ref of info.importedFiles) {
      const resolved = ts.resolveModuleName(ref.fileName, file, options, ts.sys).resolvedModule?.resolvedFileName;
      if (resolved && own.has(path.resolve(resolved))) targets.add(path.resolve(resolved));
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The strongly connected components with more than one file (or a file importing itself): the cycles. */
function importCycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const connect = (v: string) => {
    indexOf.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indexOf.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
    }
    if (low.get(v) === indexOf.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || graph.get(v)?.has(v)) out.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indexOf.has(v)) connect(v);
  return out;
}

/** One concrete loop through a cycle's files, for the message: a -> b -> ... -> a. */
function loopThrough(graph: Map<string, Set<string>>, scc: string[], root: string): string {
  const inScc = new Set(scc);
  const start = scc[0];
  const prev = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!inScc.has(w)) continue;
      if (w === start) {
        const pathBack = [v];
        while (pathBack[0] !== start) pathBack.unshift(prev.get(pathBack[0])!);
        return [...pathBack, start].map((f) => path.relative(root, f)).join(' -> ');
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return scc.map((f) => path.relative(root, f)).join(', ');
}

function describeCycles(root: string): { cycles: string[][]; messages: string[] } {
  const graph = importGraph(root);
  const sccs = importCycles(graph);
  return {
    cycles: sccs.map((scc) => scc.map((f) => path.relative(root, f).split(path.sep).join('/'))),
    messages: sccs.map((scc) => loopThrough(graph, scc, root)),
  };
}

const sameSet = (a: string[], b: string[]) => a.length === b.length && [...a].sort().every((f, i) => f === [...b].sort()[i]);

describe('no import cycles among the project\'s own files', () => {
  it('finds a cycle closed by a type-only import, and a longer one through re-exports (the check can fail)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'whale-cycles-'));
    try {
      writeFileSync(path.join(dir, 'a.ts'), "import { b } from './b';\nexport interface A { n: number }\nexport const a = b + 1;\n");
      writeFileSync(path.join(dir, 'b.ts'), "import type { A } from './a';\nexport const b = 1;\nexport type B = A;\n");
      writeFileSync(path.join(dir, 'c.ts'), "export * from './d';\n");
      writeFileSync(path.join(dir, 'd.ts'), "export const d = (): Promise<unknown> => import('./e');\n");
      writeFileSync(path.join(dir, 'e.ts'), "import { d } from './c';\nexport const e = d;\n");
      writeFileSync(path.join(dir, 'f.ts'), "import { a } from './a';\nexport const f = a;\n");
      const { cycles, messages } = describeCycles(dir);
      assert.deepEqual(cycles, [['a.ts', 'b.ts'], ['c.ts', 'd.ts', 'e.ts']]);
      assert.match(messages[0], /^a\.ts -> b\.ts -> a\.ts$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the repository has none (outside the commented allow-list)', () => {
    const { cycles, messages } = describeCycles(ROOT);
    const unexpected = cycles.map((c, i) => ({ c, m: messages[i] })).filter(({ c }) => !ALLOWED_CYCLES.some((a) => sameSet(a.files, c)));
    assert.deepEqual(unexpected.map((u) => u.m), [], 'import cycles (type-only imports count): break each by moving the shared types or helpers into a module both sides import');
    const stale = ALLOWED_CYCLES.filter((a) => !cycles.some((c) => sameSet(a.files, c)));
    assert.deepEqual(stale.map((s) => s.files.join(' <-> ')), [], 'allow-listed cycles that are gone: remove them from ALLOWED_CYCLES');
  });
});
