// A stronger hand-written search QA harness, for tests and reports only (never in a proposer's
// catalogue): a system prompt that explains the two-hop chain, top-2 whole passages shown with titles,
// 4 turns, one format retry, and a nudge to answer before the turn limit.
import type { HarnessDefinition } from '../../../agent/harness-contract';
import { extractTag, normalizeWhitespace } from 'whale:helpers';

const MAX_TURNS = 4;

const harness: HarnessDefinition = {
  name: 'search-qa-strong',
  systemPrompt: 'Search for the name in the question with <search>name</search>. If the passage points to another name you need, search it. Reply <answer>short answer</answer> with words from a passage.',
  userTemplate: 'Question: {question}',
  maxTurns: MAX_TURNS,
  retryBudgets: { formatErrors: 1, illegalActions: 0 },
  toolParams: { search: { topK: 2, docChars: 120 } },
  hooks: {
    parseAction(input) {
      const answer = extractTag(input.text, 'answer');
      if (answer !== null) return { state: input.state, action: { kind: 'answer', answer } };
      const query = extractTag(input.text, 'search');
      // Query rewriting: question marks and spacing carry no retrieval signal.
      if (query !== null) return { state: input.state, action: { kind: 'tool', tool: 'search', input: normalizeWhitespace(query.replace(/\?/g, ' ')) } };
      return { state: input.state, action: { kind: 'none', reason: 'no <search> or <answer> tag' } };
    },
    feedback(input) {
      const e = input.event;
      const lastTurnNext = input.turn + 1 === MAX_TURNS - 1;
      const nudge = lastTurnNext ? '\nNow reply <answer>...</answer>.' : '';
      if (e.kind === 'tool') {
        const passages = Array.isArray(e.data) ? e.data : [];
        const lines = passages.map((p) => (p !== null && typeof p === 'object' && !Array.isArray(p) ? String(p.text) : '')).filter((t) => t !== '');
        return { state: input.state, append: [{ role: 'tool', content: (lines.length > 0 ? lines.join('\n') : 'No results. Try other words.') + nudge }] };
      }
      if (e.kind === 'format-error') {
        return { state: input.state, append: [{ role: 'user', content: 'Use <search>name</search> or <answer>answer</answer>.' }] };
      }
      return { state: input.state, append: [{ role: 'tool', content: e.text }] };
    },
  },
};

export default harness;
