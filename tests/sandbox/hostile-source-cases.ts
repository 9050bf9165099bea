// Hostile harness sources aimed at the compiler rather than the isolate: the parser's and the checker's
// limits (deep nesting, type-level recursion, huge unions and strings), host-file reads through type
// references, and static-check evasion through escapes. Each names the typed result validation must end in.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { HarnessFailureKind } from '../../agent/harness-runner';
import { harnessSource } from '../agent/harness-fixtures';

export interface HostileSourceCase {
  name: string;
  source: string;
  /** The validation's failure kind; 'clean' for a source that is odd but legal and must validate. */
  expect: Array<HarnessFailureKind | 'clean'>;
  /** Checked against the failure's reason or, for 'clean' cases, ignored. */
  reason?: RegExp;
  /** True for the cases that need a CPU, memory or wall-time cap to stop them (they take seconds). */
  heavy?: boolean;
}

/** A host file with a distinctive literal type: no validation message may ever show it. */
export const SECRET_MARK = 'hunter2-host-secret';
const secretDir = mkdtempSync(path.join(tmpdir(), 'whale-secret-'));
export const SECRET_FILE = path.join(secretDir, 'secret.ts');
writeFileSync(SECRET_FILE, `export type Secret = '${SECRET_MARK}';\nexport declare const secret: '${SECRET_MARK}';\n`);
writeFileSync(path.join(secretDir, 'secret.d.ts'), `declare const hostSecret: '${SECRET_MARK}';\n`);
const SECRET_MODULE = SECRET_FILE.replace(/\.ts$/, '');
/** Removes the host files above (call once the cases have run). */
export const removeSecretFiles = (): void => rmSync(secretDir, { recursive: true, force: true });

const pre = (preamble: string) => harnessSource({}, '', preamble);
const times = (n: number, f: (i: number) => string, sep = '\n') => Array.from({ length: n }, (_, i) => f(i)).join(sep);
const NESTED = /nested too deeply for the compiler/;

/** The reproductions from the hostile review: each crashed, stalled or leaked on the in-process validator. */
export const REVIEW_CASES: HostileSourceCase[] = [
  {
    name: 'type-level string doubling used by 8 declarations (V8 out of memory in-process)',
    source: pre("type D<S extends string, N extends 0[] = []> = N['length'] extends 27 ? S : D<`${S}${S}`, [...N, 0]>;\n" + times(8, (i) => `type X${i} = D<'a${i}'>;`)),
    // The heap cap usually fires first; under heavy machine load the CPU cap can win the race.
    expect: ['memory-limit', 'timeout'],
    heavy: true,
  },
  {
    // The review's reproduction had 20 such types (10-30 s in-process then); on a fast machine the child's checker
    // finished 20 in 3.4 s and called them clean, so the case carries five times as many: well past the CPU cap anywhere.
    name: '100 tail-recursive tuple types in 10 KB (the review\'s 20 took 10-30 s of checker time in-process)',
    source: pre(times(100, (i) => `type B${i}<A extends 0[] = []> = A['length'] extends ${980 + (i % 20)} ? A : B${i}<[...A, 0]>; type U${i} = B${i};`)),
    expect: ['timeout'],
    heavy: true,
  },
  { name: '1,000 nested parentheses (RangeError in-process)', source: pre(`const deep = ${'('.repeat(1000)}1${')'.repeat(1000)};`), expect: ['compile-error'], reason: NESTED },
  {
    name: '3,000-branch else-if chain (RangeError in-process)',
    source: pre(`export function pick(n: number): number {\n${times(3000, (i) => `${i ? 'else ' : ''}if (n === ${i}) return ${i};`)}\nreturn -1; }`),
    expect: ['compile-error'],
    reason: NESTED,
  },
  { name: 'type import from an absolute host path', source: pre(`import type * as S from '${SECRET_MODULE}';\nconst leak: S.Secret = 'x';`), expect: ['compile-error'], reason: /Cannot find module/ },
];

/** Cases of our own, aimed at the same causes reached other ways. */
export const OWN_CASES: HostileSourceCase[] = [
  { name: '/// <reference path> to a host file', source: `/// <reference path="${SECRET_FILE.replace(/secret\.ts$/, 'secret.d.ts')}" />\n` + pre("const leak: typeof hostSecret = 'x';"), expect: ['compile-error'] },
  { name: "import('/host/path') type query", source: pre(`const leak: import('${SECRET_MODULE}').Secret = 'x';`), expect: ['compile-error'], reason: /Cannot find module/ },
  { name: '/// <reference types="node"> (Node types are not served)', source: '/// <reference types="node" />\n' + pre("const leak: NodeJS.Platform = 'x';"), expect: ['compile-error'] },
  { name: '/// <reference lib="dom"> (only the ES2022 lib is served)', source: '/// <reference lib="dom" />\n' + pre('const leak: HTMLElement | null = null;'), expect: ['compile-error'] },
  { name: 'type import of a relative path outside the contract', source: pre("import type { Foo } from '../../package.json';\nconst x: Foo | null = null;"), expect: ['compile-error'], reason: /Cannot find module/ },
  { name: 'deep generic nesting (instantiation depth)', source: pre("type Nest<T, N extends 0[] = []> = N['length'] extends 400 ? T : Nest<{ v: T }, [...N, 0]>;\nexport const x: Nest<1> = null as never;"), expect: ['compile-error', 'clean'] },
  { name: 'template-literal cross product of 1,000,000 members', source: pre("type Dg = '0'|'1'|'2'|'3'|'4'|'5'|'6'|'7'|'8'|'9';\ntype Big = `${Dg}${Dg}${Dg}${Dg}${Dg}${Dg}`;\nexport const b: Big = '000000';"), expect: ['compile-error'], reason: /too complex/ },
  { name: 'tuple doubling to 2^20 elements', source: pre(`type Pow<N extends 0[], A extends 0[] = [0]> = N extends [0, ...infer R extends 0[]] ? Pow<R, [...A, ...A]> : A;\ntype X = Pow<[${times(20, () => '0', ', ')}]>;\nexport const x: X['length'] = 0;`), expect: ['compile-error'] },
  { name: 'recursive interface compared structurally', source: pre('interface I<T> { next: I<[T]>; v: T }\ndeclare const a: I<1>;\nexport const b: I<2> = a;'), expect: ['compile-error'] },
  {
    name: 'mapped type over 10,000 template keys, compared twice',
    source: pre("type Dg = '0'|'1'|'2'|'3'|'4'|'5'|'6'|'7'|'8'|'9';\ntype K = `k${Dg}${Dg}${Dg}${Dg}`;\ntype M<T> = { [P in K]: T };\ndeclare const m: M<1>;\nexport const n: M<2> = m;\nexport const o: M<1 | 2> = m;"),
    expect: ['compile-error', 'timeout'],
  },
  { name: '1,500 nested template literals', source: pre(`export const t = ${'`${'.repeat(1500)}1${'}`'.repeat(1500)};`), expect: ['compile-error'], reason: NESTED },
  { name: '5,000 nested array literals', source: pre(`export const a = ${'['.repeat(5000)}1${']'.repeat(5000)};`), expect: ['compile-error'], reason: NESTED },
  { name: '3,000 nested generic types', source: pre(`export type A = ${'Array<'.repeat(3000)}1${'>'.repeat(3000)};`), expect: ['compile-error'], reason: NESTED },
  // Minutes of compiler time in-process (quadratic somewhere in the parser or emitter): the CPU or wall cap ends it.
  { name: '30,000-term binary expression', source: pre(`export const sum = ${times(30_000, () => '1', '+')};`), expect: ['timeout'], heavy: true },
  { name: 'giant string literal (200 KB, under the size limit)', source: pre(`export const big = '${'x'.repeat(200_000)}';`), expect: ['clean'] },
  { name: 'enormous file (2 MB of comments, over the size limit)', source: pre(`/*${'y'.repeat(2_000_000)}*/`), expect: ['compile-error'], reason: /the limit is/ },
  { name: '2,000 module-level declarations', source: pre(times(2_000, (i) => `const k${i} = ${i};`)), expect: ['clean'] },
  { name: 'unicode escape spelling process (\\u0070rocess)', source: harnessSource({}, 'setup() { \\u0070rocess.exit(1); return { state: null }; },'), expect: ['compile-error'], reason: /process/ },
  { name: 'code-point escape spelling globalThis (\\u{67}lobalThis)', source: harnessSource({}, 'setup() { return { state: String(\\u{67}lobalThis) }; },'), expect: ['compile-error'], reason: /globalThis/ },
  { name: 'zero-width and bidi characters in the source', source: pre("export const s = '\u202e\u200b';\nconst x\u200c = 1;"), expect: ['compile-error', 'clean'] },
];
