// Two small test environments for the loop, the contract and the sandbox before the real domains exist:
// `lookupEnv` (one tool, one final answer, like search QA) and `sequenceEnv` (multi-step moves with an
// opponent reply, illegal moves and a legal wrong move ending the episode, like chess puzzles).

import type { DomainEnvironment, EnvTask, JsonObject, ToolResult } from '../../agent/environment';

type LookupState = { answer: string | null; lookups: string[] };

const CODES: Record<string, string> = { alpha: 'K7', bravo: 'Q2', charlie: 'Z9', delta: 'M4' };

export function lookupTask(name: string): EnvTask<{ answer: string }> {
  return { id: `lookup/${name}`, itemId: name, question: `What is the code of ${name}?`, view: { name }, hidden: { answer: CODES[name] } };
}

const normalize = (s: string) => s.toLowerCase().replace(/\s+/g, ' ').trim();

export const lookupEnv: DomainEnvironment<{ answer: string }, LookupState> = {
  domain: 'toy-lookup',
  answerKind: 'answer',
  tools: [
    {
      name: 'lookup',
      description: 'look up the code of a name',
      params: { maxChars: { kind: 'int', description: 'characters of output kept', min: 1, max: 100, default: 40 } },
    },
  ],
  initialState: () => ({ answer: null, lookups: [] }),
  observe: (_task, state): JsonObject => ({ lookups: state.lookups.length }),
  executeTool(_task, state, call): ToolResult<LookupState> {
    const code = CODES[call.input.trim()];
    const text = (code ? `${call.input.trim()}: ${code}` : `no entry for ${call.input}`).slice(0, call.params.maxChars);
    return { state: { ...state, lookups: [...state.lookups, call.input] }, ok: code !== undefined, text, data: { code: code ?? null } };
  },
  submit: (_task, state, answer) => ({ state: { ...state, answer }, outcome: 'final', text: 'answer recorded', data: null }),
  normalizeAnswer: normalize,
  verify: (task, state) => (state.answer !== null && state.answer === normalize(task.hidden.answer) ? 1 : 0),
};

type SequenceState = { index: number; failed: boolean; history: string[] };
const LEGAL = ['a', 'b', 'c', 'd', 'e'];

export function sequenceTask(id: string, line: string[]): EnvTask<{ line: string[] }> {
  return { id: `seq/${id}`, itemId: id, question: `Find the line of ${line.length / 2} moves.`, view: { legal: LEGAL.join(' ') }, hidden: { line } };
}

/** Our moves are line[0], line[2], ...; the environment answers with line[1], line[3], ... */
export const sequenceEnv: DomainEnvironment<{ line: string[] }, SequenceState> = {
  domain: 'toy-sequence',
  answerKind: 'move',
  tools: [],
  initialState: () => ({ index: 0, failed: false, history: [] }),
  observe: (_task, state): JsonObject => ({ moves: state.history.join(' '), legal: LEGAL.join(' ') }),
  executeTool: () => {
    throw new Error('sequenceEnv has no tools: the loop must never call executeTool');
  },
  submit(task, state, move) {
    if (!LEGAL.includes(move)) return { state, outcome: 'illegal', text: `${move} is not a legal move; legal: ${LEGAL.join(' ')}`, data: null };
    if (move !== task.hidden.line[state.index]) {
      return { state: { ...state, failed: true, history: [...state.history, move] }, outcome: 'final', text: 'wrong move', data: null };
    }
    const reply = task.hidden.line[state.index + 1];
    const history = [...state.history, move, ...(reply ? [reply] : [])];
    const index = state.index + 2;
    if (index >= task.hidden.line.length) return { state: { index, failed: false, history }, outcome: 'final', text: 'line complete', data: null };
    return { state: { index, failed: false, history }, outcome: 'continue', text: `opponent played ${reply}`, data: { reply } };
  },
  normalizeAnswer: (s) => s.trim().toLowerCase(),
  verify: (task, state) => (!state.failed && state.index >= task.hidden.line.length ? 1 : 0),
};
