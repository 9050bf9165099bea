// An example domain that lives outside the project's built-in ones: "pairs", short word problems about two
// numbers (two people's counts together, how many more one has, rows times items per row), with an integer
// calculator tool and an exact-number verifier. It shares its answer format and tool tag with the built-in
// math domain, so it starts from the math base policy: the small model solves part of it from the start,
// and both levers (call the calculator or guess; how the harness presents the numbers) are live.
//
// Runtime imports: only this folder. Types come from the project with `import type` (erased at run time),
// so the folder works wherever it is copied; `whale run --domain ./pairs-domain` pins it by content hash.
import type { DomainModule } from '../../domains/external';
import type { DomainEnvironment, EnvTask, JsonObject } from '../../agent/environment';
import { calculate } from './calculator';

type PairsHidden = { answer: number };
type PairsState = { calls: { expression: string; result: string; ok: boolean }[]; answer: string | null };
type Kind = 'together' | 'more' | 'rows';

const NAMES = ['Ana', 'Ben', 'Cai', 'Dee', 'Eli', 'Fay', 'Gus', 'Hal', 'Ivy', 'Jon', 'Kim', 'Lou'];
const ITEMS = ['apples', 'books', 'coins', 'eggs', 'pens', 'shells', 'stamps', 'cards'];

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

function generateTasks(): EnvTask<PairsHidden>[] {
  const next = rng('pairs-v1');
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)];
  const tasks: EnvTask<PairsHidden>[] = [];
  const seen = new Set<string>();
  // Tasks per kind; 'rows' has 19 x 19 distinct items, so it gets fewer.
  const counts: Record<Kind, number> = { together: 1200, more: 1200, rows: 300 };
  for (const kind of Object.keys(counts) as Kind[]) {
    let made = 0;
    while (made < counts[kind]) {
      const a = kind === 'rows' ? int(2, 20) : int(10, 99);
      const b = kind === 'rows' ? int(2, 20) : kind === 'more' ? int(5, a - 1) : int(5, 99);
      const itemId = `${kind}:${a}:${b}`;
      if (seen.has(itemId)) continue;
      seen.add(itemId);
      const [p, q] = [pick(NAMES.slice(0, 6)), pick(NAMES.slice(6))];
      const item = pick(ITEMS);
      const question = kind === 'together'
        ? `${p} has ${a} ${item}. ${q} has ${b} ${item}. How many ${item} do they have together?`
        : kind === 'more'
          ? `${p} has ${a} ${item}. ${q} has ${b} ${item}. How many more ${item} does ${p} have than ${q}?`
          : `${p} has ${a} boxes with ${b} ${item} in each box. How many ${item} does ${p} have?`;
      const answer = kind === 'together' ? a + b : kind === 'more' ? a - b : a * b;
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
    return { state: { ...state, calls: [...state.calls, { expression: call.input, result, ok: r.ok }] }, ok: r.ok, text: result, data: r.ok ? { value: r.value } : { error: r.error } };
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
  description: 'Two-number word problems (together, how many more, boxes times items) with an integer calculator; exact match.',
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
