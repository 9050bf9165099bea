// Hostile runtime cases aimed at the causes behind state across calls, clocks and odd return values:
// clock and entropy sources, GC-timed objects, built-ins that could hold state (the global object,
// function objects, iterator prototypes, RegExp's legacy statics, the require function), prototype chains
// of input objects, getters, proxies, Symbols and toJSON in returned data, huge returned data, promise
// tricks and re-entrancy. Each ends as the typed result named, run by tests/sandbox/hostile.test.ts.
// The clock, GC-timing, RegExp-statics, Math.max, Set-iterator and require cases succeeded before the
// bootstrap's deep freeze and clock blocking (checked against the previous commit); the others held already.

import { harnessSource } from '../agent/harness-fixtures';
import type { HostileCase } from './hostile-cases';

const FN = '[].constructor.constructor';
const setup = (body: string) => harnessSource({}, `setup(input) { ${body} },`);
const quick = { cpuLimits: 0 };
const timed = { cpuLimits: 16 };
const deterministic = /hooks must be deterministic/;
const frozen = /not extensible|read only|read-only|Cannot assign|Cannot define|Cannot add/;

export const RUNTIME_CASES: HostileCase[] = [
  // Clocks and entropy.
  { name: 'clock: new Date()', source: setup('return { state: new Date().getTime() };'), expect: 'runtime-error', stage: 'call', reason: deterministic, ...quick },
  { name: 'clock: Date() called as a function', source: setup('return { state: (Date as unknown as () => string)() };'), expect: 'runtime-error', stage: 'call', reason: deterministic, ...quick },
  { name: 'clock: Intl.DateTimeFormat().format()', source: setup('return { state: Intl.DateTimeFormat().format() };'), expect: 'runtime-error', stage: 'call', reason: deterministic, ...quick },
  { name: 'clock: Intl.DateTimeFormat().formatToParts()', source: setup('return { state: Intl.DateTimeFormat().formatToParts().length };'), expect: 'runtime-error', stage: 'call', reason: deterministic, ...quick },
  { name: 'clock: the real Date through a date instance\'s constructor', source: setup('const D = new Date(0).constructor as DateConstructor; return { state: new D().getTime() };'), expect: 'runtime-error', stage: 'call', reason: deterministic, ...quick },
  { name: 'clock: a Date subclass calling super() with no arguments', source: setup('class Now extends Date { constructor() { super(); } } return { state: new Now().getTime() };'), expect: 'runtime-error', stage: 'call', reason: deterministic, ...quick },
  { name: 'GC timing: WeakRef', source: setup(`const W = ${FN}('return WeakRef')(); return { state: typeof new W({}).deref() };`), expect: 'runtime-error', stage: 'call', reason: /WeakRef is not defined/, ...quick },
  { name: 'GC timing: FinalizationRegistry', source: setup(`const F = ${FN}('return FinalizationRegistry')(); new F(() => 0).register({}, 1); return { state: 1 };`), expect: 'runtime-error', stage: 'call', reason: /FinalizationRegistry is not defined/, ...quick },
  // Built-ins as hidden state.
  { name: 'state: a property on the global object', source: setup(`const g = ${FN}('return this')(); g.memo = (g.memo ?? 0) + 1; return { state: g.memo };`), expect: 'runtime-error', stage: 'call', reason: frozen, ...quick },
  { name: 'state: a property on a built-in function (Math.max)', source: setup('const m = Math.max as unknown as { memo?: number }; m.memo = (m.memo ?? 0) + 1; return { state: m.memo };'), expect: 'runtime-error', stage: 'call', reason: frozen, ...quick },
  { name: 'state: the Set iterator prototype', source: setup("const p = Object.getPrototypeOf(new Set().values()) as Record<string, number>; p.memo = 1; return { state: p.memo };"), expect: 'runtime-error', stage: 'call', reason: frozen, ...quick },
  { name: 'state: the require function (module-level arguments[1])', source: harnessSource({}, '', 'const req = arguments[1] as unknown as Record<string, unknown>; req.memo = {}; export const r = 1;'), expect: 'runtime-error', stage: 'load', reason: frozen, ...quick },
  { name: 'state: RegExp legacy statics (RegExp.$1 carries the last match)', source: setup("/(\\w+)/.exec(input.task.question); const r = RegExp as unknown as Record<string, unknown>; if (r.$1 === undefined) throw new Error('no RegExp.$1'); return { state: String(r.$1) };"), expect: 'runtime-error', stage: 'call', reason: /no RegExp\.\$1/, ...quick },
  { name: "state: a property on the input's prototype chain", source: setup("(input.constructor.prototype as Record<string, unknown>).memo = 1; return { state: 1 };"), expect: 'runtime-error', stage: 'call', reason: frozen, ...quick },
  { name: 'state: the helpers module object', source: harnessSource({}, "setup() { (helpers as unknown as Record<string, unknown>).memo = 1; return { state: 1 }; },", "import * as helpers from 'whale:helpers';"), expect: 'runtime-error', stage: 'call', reason: frozen, ...quick },
  // Odd return values.
  { name: 'returned proxy whose ownKeys trap loops', source: setup('return { state: new Proxy({}, { ownKeys() { for (;;) {} } }) as never };'), expect: 'timeout', stage: 'call', ...timed },
  { name: 'returned proxy that nests itself forever', source: setup("const p: object = new Proxy({}, { get: (_t, k) => (k === 'toJSON' ? undefined : p), ownKeys: () => ['a'], getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }) }); return { state: p as never };"), expect: 'bad-return-value', stage: 'call', reason: /circular|call stack/, ...quick },
  { name: 'returned getter that returns a new object each time (lazy infinite depth)', source: setup('const mk = (): object => ({ get next() { return mk(); } }); return { state: mk() as never };'), expect: 'bad-return-value', stage: 'call', reason: /call stack|nested deeper/, ...quick },
  { name: 'returned Symbol value', source: setup('return { state: { s: Symbol.iterator } as never };'), expect: 'bad-return-value', stage: 'call', reason: /symbol is not plain data/, ...quick },
  { name: 'toJSON returning 3 M characters', source: setup("return { state: { toJSON: () => 'x'.repeat(3e6) } as never };"), expect: 'bad-return-value', stage: 'call', reason: /limit is 1000000/, ...quick },
  { name: 'toJSON that throws', source: setup("return { state: { toJSON() { throw new Error('no json'); } } as never };"), expect: 'bad-return-value', stage: 'call', reason: /no json/, ...quick },
  { name: 'toJSON returning a function', source: setup('return { state: { toJSON: () => () => 1 } as never };'), expect: 'bad-return-value', stage: 'call', reason: /function is not plain data/, ...quick },
  { name: 'huge returned data: 300,000 numbers', source: setup('return { state: Array.from({ length: 300000 }, (_, i) => i) };'), expect: 'bad-return-value', stage: 'call', reason: /limit is 1000000/, ...quick },
  { name: 'thenable with a looping `then` getter', source: setup('return { get then(): never { for (;;) {} }, state: 1 } as never;'), expect: 'timeout', stage: 'call', ...timed },
  // Errors, promises, re-entrancy.
  { name: 'thrown Error whose message getter loops', source: setup('throw Object.create(Error.prototype, { message: { get() { for (;;) {} } } });'), expect: 'timeout', stage: 'call', ...timed },
  { name: 'a microtask that loops after the hook returned', source: setup('void Promise.resolve().then(() => { for (;;) {} }); return { state: 1 };'), expect: 'timeout', stage: 'call', ...timed },
  { name: 're-entrancy: a hook calling itself through the exported harness', source: harnessSource({}, 'setup(input): never { return harness.hooks!.setup!(input) as never; },'), expect: 'runtime-error', stage: 'call', reason: /Maximum call stack/, ...quick },
  { name: 're-entrancy: a getter in the returned data calling the hook again', source: harnessSource({}, 'setup(input) { return { get state(): never { return harness.hooks!.setup!(input) as never; } }; },'), expect: 'bad-return-value', stage: 'call', reason: /Maximum call stack/, ...quick },
];
