// An example domain that lives outside the project's built-in ones: "pairs", one-step word problems on two
// numbers (gets more, gives some away, has n times as many), with its own integer calculator tool and an
// exact-number verifier. It is an arithmetic variant of the built-in math domain's first level (new names,
// items and number ranges, the same sentence patterns, answer format and tool tag), so it starts from the
// math base policy: the small model solves part of it from the start, and both levers (call the calculator
// or guess; how the harness asks for the tool) are live.
//
// Runtime imports: only this folder. Types come from the project with `import type` (erased at run time),
// so the folder works wherever it is copied; `whale run --domain ./pairs-domain` pins it by content hash.
import type { DomainModule } from '../../domains/external';
import type { DomainEnvironment, EnvTask, JsonObject, JsonValue } from '../../agent/environment';
import { calculate } from './calculator';

type PairsHidden = { answer: number };
type PairsState = { calls: { expression: string; result: string; ok: boolean }[]; answer: string | null };
type Kind = 'gets' | 'loses' | 'times';

// Other names and items than the math domain's: the phrasing is the math base policy's, the tasks are new.
const NAMES = ['Abe', 'Bo', 'Cy', 'Di', 'Ed', 'Flo', 'Gil', 'Hana', 'Ike', 'Jo', 'Kai', 'Liv'];
const ITEMS = ['marbles', 'stickers', 'buttons', 'cups', 'kites', 'rocks', 'ribbons', 'bells'];

/** A small seeded generator (mulberry32 over an FNV-1a hash of the seed string): no clocks, no Math.random. */
function rng(seed: string): () => number {
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193);
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One-step problems about one person and two numbers: gets more, loses some, has n times as many. */
function generateTasks(): EnvTask<PairsHidden>[] {
  const next = rng('pairs-v1');
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)];
  const tasks: EnvTask<PairsHidden>[] = [];
  const seen = new Set<string>();
  // Tasks per kind; 'times' has only 98 x 4 distinct number pairs, so it gets fewer.
  const counts: Record<Kind, number> = { gets: 1200, loses: 1200, times: 300 };
  for (const kind of Object.keys(counts) as Kind[]) {
    let made = 0;
    while (made < counts[kind]) {
      const a = kind === 'times' ? int(2, 99) : int(10, 99);
      const b = kind === 'times' ? int(2, 5) : kind === 'loses' ? int(1, a - 1) : int(2, 99);
      const itemId = `${kind}:${a}:${b}`;
      if (seen.has(itemId)) continue;
      seen.add(itemId);
      const p = pick(NAMES);
      const item = pick(ITEMS);
      const step = kind === 'gets' ? `${p} gets ${b} more.` : kind === 'loses' ? `${p} gives away ${b}.` : `${p} then has ${b} times as many.`;
      const question = `${p} has ${a} ${item}. ${step} How many ${item} does ${p} have now?`;
      const answer = kind === 'gets' ? a + b : kind === 'loses' ? a - b : a * b;
      tasks.push({ id: `pairs/${kind}/${String(made).padStart(4, '0')}`, itemId, question, view: { kind }, hidden: { answer } });
      made++;
    }
  }
  return tasks;
}

/** Local, character-level rewrites only (the loop's provenance check needs that): case, spaces, a trailing period. */
function normalizeAnswer(text: string): string {
  return text.toLowerCase().replace(/(\d)\.(?!\d)/g, '$1').replace(/\s+/g, ' ').trim();
}

const environment: DomainEnvironment<PairsHidden, PairsState> = {
  domain: 'pairs',
  tools: [{ name: 'calc', description: 'calc(expression): integer arithmetic with + - * and parentheses, e.g. <calc>12+7</calc>', params: {} }],
  answerKind: 'answer',
  initialState: () => ({ calls: [], answer: null }),
  observe: (task, state): JsonObject => ({ question: task.question, calculatorCalls: state.calls.length }),
  executeTool(_task, state, call) {
    if (call.tool !== 'calc') return { state, ok: false, text: `unknown tool "${call.tool}"; the only tool is calc`, data: null };
    const r = calculate(call.input);
    const result = r.ok ? String(r.value) : `error: ${r.error}`;
    const data: JsonValue = r.ok ? { value: r.value } : { error: r.error };
    return { state: { ...state, calls: [...state.calls, { expression: call.input, result, ok: r.ok }] }, ok: r.ok, text: result, data };
  },
  submit: (_task, state, answer) => ({ state: { ...state, answer }, outcome: 'final', text: 'answer recorded', data: null }),
  normalizeAnswer,
  verify(task, finalState) {
    const a = finalState.answer;
    return a !== null && /^-?\d+$/.test(a) && Number(a) === task.hidden.answer ? 1 : 0;
  },
};

const pairsDomain: DomainModule<PairsHidden, PairsState> = {
  apiVersion: 1,
  name: 'pairs',
  description: 'One-step word problems on two numbers (gets more, gives away, n times as many) with an integer calculator; exact match.',
  environment,
  tasks: generateTasks,
  splitSeed: 'pairs-splits-v1',
  splitSizes: { harness: 128, test: 128 },
  seedHarness: './h0.ts',
  basePolicy: { builtin: 'math' },
  // Free text is a question with no reference: the reward is then unknown (null), never guessed.
  taskFromText: (text) => ({ id: `pairs/text/${text.length}`, itemId: 'text', question: text, view: { kind: 'text' }, hidden: { answer: Number.NaN } }),
  diagnose: (task, state) => ({ calculatorCalls: state.calls.length, calculatorReachedAnswer: state.calls.some((c) => c.ok && Number(c.result) === task.hidden.answer) }),
};

export default pairsDomain;
