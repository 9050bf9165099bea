// Guards the layering around the tests: nothing outside tests/ imports a file under tests/ (code that scripts
// and tests share lives in testbed/), and testbed/, which starts and kills processes, is imported only by the
// tests, the scripts and itself, never by the product. Every import form counts: static, type-only,
// re-exports, dynamic import() and require(), found with the TypeScript pre-processor.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist']);

/** Relative import specifiers of a source text, resolved to paths relative to ROOT. */
export function importsOf(file: string, text: string): { spec: string; target: string }[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => ({ spec, target: path.relative(ROOT, path.resolve(ROOT, path.dirname(file), spec)).split(path.sep).join('/') }));
}

/** Every source file under ROOT (dot folders, node_modules and dist left out), relative to ROOT. */
function sourceFiles(dir = ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name.startsWith('.') || SKIP_DIRS.has(e.name)) return [];
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return SOURCE.test(e.name) ? [path.relative(ROOT, p).split(path.sep).join('/')] : [];
  });
}

const under = (p: string, folder: string) => p === folder || p.startsWith(`${folder}/`);

describe('imports across the tests boundary', () => {
  it('finds every import form, and only imports', () => {
    const text = [
      "import { a } from '../tests/a';",
      "import type { B } from '../tests/b';",
      "export * from '../tests/c';",
      "const d = require('../tests/d');",
      "async function e() { return import('../tests/e'); }",
      "import { f } from '../testsuite/f';",
      "// import { g } from '../tests/g';",
      "const h = 'see ../tests/h';",
      "import { z } from 'zod';",
    ].join('\n');
    assert.deepEqual(importsOf('scripts/x.ts', text).map((i) => i.target), ['tests/a', 'tests/b', 'tests/c', 'tests/d', 'tests/e', 'testsuite/f']);
  });

  const files = sourceFiles();
  const edges = files.flatMap((file) => importsOf(file, readFileSync(path.join(ROOT, file), 'utf8')).map((i) => ({ file, ...i })));

  it('nothing outside tests/ imports a file under tests/', () => {
    assert.ok(files.some((f) => under(f, 'scripts')) && files.some((f) => under(f, 'tests')), 'the scan found no scripts or tests: it is not looking at the project');
    const bad = edges.filter((e) => !under(e.file, 'tests') && under(e.target, 'tests'));
    assert.deepEqual(bad.map((e) => `${e.file} imports ${e.spec}`), [], 'move what scripts (or the product) share with tests to testbed/ (process harnesses) or next to the code it serves');
  });

  it('testbed/ is imported only by tests/, scripts/ and testbed/ itself', () => {
    const bad = edges.filter((e) => under(e.target, 'testbed') && !['tests', 'scripts', 'testbed'].some((d) => under(e.file, d)));
    assert.deepEqual(bad.map((e) => `${e.file} imports ${e.spec}`), [], 'testbed/ starts and kills processes for tests and scripts; the product must not depend on it');
    assert.ok(edges.some((e) => under(e.file, 'scripts') && under(e.target, 'testbed')), 'scripts/soak.ts imports testbed/: the scan must see that edge');
  });
});
