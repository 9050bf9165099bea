// The hostile-harness suite's cases: each a harness source, the phase it attacks in, the typed result it
// must end as, and a bound on how long that may take. Escapes avoid the static checks on purpose
// (`[].constructor.constructor` reaches the Function constructor without naming it) so the isolate itself
// is what stops them; the cases named "static:" check the static pass.

import type { HarnessFailureKind } from '../../agent/harness-runner';
import { harnessSource } from '../agent/harness-fixtures';

export interface HostileCase {
  name: string;
  source: string;
  expect: HarnessFailureKind;
  /** Where it must be stopped: while loading, or when a hook runs. */
  stage: 'load' | 'call';
  /** Upper bound on the time to the typed result, in multiples of the CPU limit plus a fixed second. */
  cpuLimits: number;
  /** Optional check on the failure's reason. */
  reason?: RegExp;
}

const FN = '[].constructor.constructor';
const setup = (body: string) => harnessSource({}, `setup(input) { ${body} },`);
const quick = { cpuLimits: 0 };
// A timeout needs 1.5 limits of wall time on an idle machine; under load the sandbox re-runs the call
// with enough wall time for the whole CPU budget at the share of a core it gets (CPU time decides), so
// the wall-time bound is loose; the CPU actually used is checked separately.
const timed = { cpuLimits: 16 };

export const HOSTILE_CASES: HostileCase[] = [
  { name: 'infinite loop in a hook', source: setup('for (;;) {}'), expect: 'timeout', stage: 'call', ...timed },
  { name: 'infinite loop at module top level', source: harnessSource({}, '', 'while (true) {}'), expect: 'timeout', stage: 'load', ...timed },
  { name: 'deep recursion', source: setup('const f = (n: number): number => f(n + 1) + 1; return { state: f(0) };'), expect: 'runtime-error', stage: 'call', reason: /Maximum call stack/, ...quick },
  { name: 'memory bomb (arrays)', source: setup('const a: number[][] = []; for (;;) a.push(new Array(1e5).fill(1));'), expect: 'memory-limit', stage: 'call', ...timed },
  { name: 'memory bomb (ArrayBuffers)', source: setup('const a: ArrayBuffer[] = []; for (;;) a.push(new ArrayBuffer(1 << 20));'), expect: 'memory-limit', stage: 'call', ...timed },
  { name: "static: require('fs')", source: harnessSource({}, '', "const fs = require('fs');"), expect: 'compile-error', stage: 'load', reason: /require/, ...quick },
  { name: 'static: import fs', source: harnessSource({}, '', "import { readFileSync } from 'fs'; export const r = readFileSync;"), expect: 'compile-error', stage: 'load', ...quick },
  { name: 'static: dynamic import()', source: setup("void import('fs'); return { state: null };"), expect: 'compile-error', stage: 'load', reason: /dynamic import/, ...quick },
  { name: 'static: process.exit', source: setup('process.exit(1); return { state: null };'), expect: 'compile-error', stage: 'load', reason: /process/, ...quick },
  { name: 'static: module-level mutable state', source: harnessSource({}, 'setup() { calls++; return { state: calls }; },', 'let calls = 0;'), expect: 'compile-error', stage: 'load', reason: /module-level/, ...quick },
  { name: 'static: async hook', source: harnessSource({}, 'async setup() { return { state: null }; },'), expect: 'compile-error', stage: 'load', ...quick },
  { name: 'escape: Function constructor to process.exit', source: setup(`const g = ${FN}('return this')(); g.process.exit(1); return { state: null };`), expect: 'runtime-error', stage: 'call', ...quick },
  { name: 'escape: Function constructor to require', source: setup(`const r = ${FN}('return require')(); return { state: String(r('fs')) };`), expect: 'runtime-error', stage: 'call', reason: /require is not defined/, ...quick },
  { name: 'escape: eval to dynamic import', source: setup(`${FN}('return import("fs")')(); return { state: null };`), expect: 'runtime-error', stage: 'call', reason: /Not supported/, ...quick },
  { name: "escape: passed-in object's constructor to process", source: setup("const p = (input.constructor.constructor as (s: string) => () => unknown)('return process')(); return { state: String(p) };"), expect: 'runtime-error', stage: 'call', reason: /process is not defined/, ...quick },
  { name: 'WebAssembly.Memory growth', source: setup(`const W = ${FN}('return WebAssembly')(); new W.Memory({ initial: 1, maximum: 65536 }).grow(16000); return { state: null };`), expect: 'runtime-error', stage: 'call', reason: /WebAssembly is not defined/, ...quick },
  { name: 'Atomics.wait', source: setup(`const A = ${FN}('return Atomics')(); A.wait(new Int32Array(new (${FN}('return SharedArrayBuffer')())(4)), 0, 0); return { state: null };`), expect: 'runtime-error', stage: 'call', reason: /Atomics is not defined/, ...quick },
  { name: 'timers through the global object', source: setup(`${FN}('return setTimeout')()(() => 0, 1); return { state: null };`), expect: 'runtime-error', stage: 'call', reason: /setTimeout is not defined/, ...quick },
  { name: 'prototype tampering (Object.prototype)', source: setup('(Object.prototype as Record<string, unknown>).polluted = 1; return { state: null };'), expect: 'runtime-error', stage: 'call', reason: /not extensible/, ...quick },
  { name: 'prototype tampering (JSON.stringify replaced)', source: setup('(JSON as { stringify: unknown }).stringify = () => "{}"; return { state: null };'), expect: 'runtime-error', stage: 'call', reason: /read only|read-only/, ...quick },
  { name: 'returning a Promise', source: setup('return Promise.resolve({ state: null }) as never;'), expect: 'bad-return-value', stage: 'call', reason: /Promise/, ...quick },
  { name: 'returning a function', source: setup('return { state: null, extra: () => 1 } as never;'), expect: 'bad-return-value', stage: 'call', reason: /function/, ...quick },
  { name: 'returning a cyclic object', source: setup('const s: Record<string, unknown> = {}; s.self = s; return { state: s as never };'), expect: 'bad-return-value', stage: 'call', reason: /circular/, ...quick },
  { name: 'getter trap that loops', source: setup('return { get state(): never { for (;;) {} } };'), expect: 'timeout', stage: 'call', ...timed },
  { name: 'getter trap that throws', source: setup("return { get state(): never { throw new Error('gotcha'); } };"), expect: 'bad-return-value', stage: 'call', reason: /gotcha/, ...quick },
  { name: 'throwing a non-Error (number)', source: setup('throw 42;'), expect: 'runtime-error', stage: 'call', reason: /non-Error value \(number\) 42/, ...quick },
  { name: 'throwing an object with a looping toString', source: setup('throw { toString() { for (;;) {} } };'), expect: 'runtime-error', stage: 'call', reason: /non-Error value \(object\)/, ...quick },
  { name: 'gigantic returned string (50 M chars, over the heap)', source: setup("return { state: 'x'.repeat(5e7) };"), expect: 'memory-limit', stage: 'call', ...timed },
  { name: 'big returned string (5 M chars, over the result cap)', source: setup("return { state: 'x'.repeat(5e6) };"), expect: 'bad-return-value', stage: 'call', reason: /limit is 1000000/, ...quick },
  { name: 'string doubling to the V8 limit', source: setup("let s = 'ab'; for (let i = 0; i < 40; i++) s = s + s; return { state: s.length };"), expect: 'runtime-error', stage: 'call', reason: /Invalid string length/, ...quick },
  { name: 'deeply nested return value (2,000 levels)', source: setup('let s: unknown = 1; for (let i = 0; i < 2000; i++) s = [s]; return { state: s as never };'), expect: 'bad-return-value', stage: 'call', reason: /nested deeper than 64/, ...quick },
  { name: 'deeply nested return value (100,000 levels)', source: setup('let s: unknown = 1; for (let i = 0; i < 100000; i++) s = [s]; return { state: s as never };'), expect: 'bad-return-value', stage: 'call', reason: /Maximum call stack/, ...quick },
  { name: 'wrong return shape', source: setup('return { text: 1 } as never;'), expect: 'bad-return-value', stage: 'call', reason: /setup returned a value outside the contract/, ...quick },
  { name: 'non-deterministic Math.random', source: setup('return { state: Math.random() };'), expect: 'runtime-error', stage: 'call', reason: /deterministic/, ...quick },
  { name: 'no default export', source: 'export const notAHarness = 1;\n', expect: 'contract-violation', stage: 'load', reason: /export default/, ...quick },
  { name: 'config out of range and unknown hook', source: harnessSource({ maxTurns: 1000 }, 'steal() { return 1; },').replace('const harness: HarnessDefinition', 'const harness: any'), expect: 'contract-violation', stage: 'load', reason: /maxTurns|unknown hook/, ...quick },
];
