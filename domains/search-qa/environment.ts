// The search QA environment: one `search` tool over a BM25 index, a free-text final answer, and the
// normalised-exact-match verifier. The state records every query, what it returned and the answer, so a
// trajectory shows what was retrieved (the retrieval hit rate is a harness-search signal).
import type { DomainEnvironment, EnvTask, JsonObject, SubmitResult, ToolCall, ToolResult, ToolSpec } from '../../agent/environment';
import { normalizeTextAnswer, textAnswersMatch } from '../common/normalize';
import { perturbAnswer } from '../../agent/provenance';
import type { Bm25Index } from './bm25';
import type { QaReference } from './corpus';
import { verifyQaAnswer } from './verifier';

export type QaState = {
  searches: { query: string; docIds: string[] }[];
  answer: string | null;
};

export const SEARCH_TOOL: ToolSpec = {
  name: 'search',
  description: 'search(query): BM25 search over the document collection; returns the top passages',
  params: {
    topK: { description: 'number of passages returned', kind: 'int', min: 1, max: 10, default: 3 },
    docChars: { description: 'each passage is cut to this many characters', kind: 'int', min: 8, max: 1000, default: 200 },
  },
};

export function createSearchQaEnvironment(index: Bm25Index): DomainEnvironment<QaReference, QaState> {
  return {
    domain: 'search-qa',
    tools: [SEARCH_TOOL],
    answerKind: 'answer',

    initialState(): QaState {
      return { searches: [], answer: null };
    },

    observe(task: EnvTask<QaReference>, state: QaState): JsonObject {
      return { question: task.question, searchesMade: state.searches.length, queries: state.searches.map((s) => s.query) };
    },

    executeTool(_task: EnvTask<QaReference>, state: QaState, call: ToolCall): ToolResult<QaState> {
      if (call.tool !== SEARCH_TOOL.name) {
        return { state, ok: false, text: `unknown tool "${call.tool}"; the only tool is search`, data: null };
      }
      const query = call.input.trim();
      const k = call.params.topK ?? SEARCH_TOOL.params.topK.default;
      const maxChars = call.params.docChars ?? SEARCH_TOOL.params.docChars.default;
      if (query === '') {
        return { state, ok: false, text: 'empty query; put search words inside the tag', data: [] };
      }
      const hits = index.query(query, k);
      const passages = hits.map((h) => ({ title: h.title, text: h.text.slice(0, maxChars) }));
      const next: QaState = { ...state, searches: [...state.searches, { query, docIds: hits.map((h) => h.id) }] };
      const text = passages.length === 0 ? 'no results' : passages.map((p) => p.text).join('\n');
      return { state: next, ok: true, text, data: passages };
    },

    submit(_task: EnvTask<QaReference>, state: QaState, answer: string): SubmitResult<QaState> {
      return { state: { ...state, answer }, outcome: 'final', text: 'answer recorded', data: null };
    },

    normalizeAnswer: normalizeTextAnswer,

    alternativeAnswer(task: EnvTask<QaReference>, _state: QaState, answer: string): string {
      const reference = task.hidden.answers[0] ?? '';
      return textAnswersMatch(answer, task.hidden.answers) ? perturbAnswer(reference) : reference;
    },

    verify(task: EnvTask<QaReference>, finalState: QaState): 0 | 1 {
      return verifyQaAnswer(finalState.answer, task.hidden).reward;
    },
  };
}
