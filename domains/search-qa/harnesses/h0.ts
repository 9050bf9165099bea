// h0 for search QA: the seed harness, weak on purpose as in the paper (a one-line system prompt, 2 turns,
// the top-1 passage cut to 48 characters, no retries). A better harness has room to win on presentation
// (more and longer passages, formatting, a nudge to answer) and control (turns, retries).
import type { HarnessDefinition } from '../../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'search-qa-h0',
  systemPrompt: 'Answer the question.',
  userTemplate: '{question}\nSearch: <search>words</search> Answer: <answer>answer</answer>',
  maxTurns: 2,
  retryBudgets: { formatErrors: 0, illegalActions: 0 },
  toolParams: { search: { topK: 1, docChars: 48 } },
  hooks: {},
};

export default harness;
