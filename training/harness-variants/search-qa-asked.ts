// A pretraining prompt variant for search QA (trusted, never a proposer's catalogue): h0's plain layout
// with the instruction to search for the name and a longer passage, so demonstrations pair that phrase
// with the teacher's SEARCH choice and show answers that are visible in a passage.
import type { HarnessDefinition } from '../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'search-qa-pretrain-asked',
  systemPrompt: 'Search for the name in the question, then answer.',
  userTemplate: '{question}\nSearch: <search>words</search> Answer: <answer>answer</answer>',
  maxTurns: 3,
  retryBudgets: { formatErrors: 0, illegalActions: 0 },
  toolParams: { search: { topK: 1, docChars: 120 } },
  hooks: {},
};

export default harness;
