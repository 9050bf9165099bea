// h0 for math: the seed harness, weak on purpose as in the paper (no system prompt, 2 turns, no retries,
// the calculator only named in the user message). Whether the model calls the tool is left to the weights.
import type { HarnessDefinition } from '../../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'math-h0',
  systemPrompt: '',
  userTemplate: '{question}\nCalculator: <calc>expression</calc> Answer: <answer>number</answer>',
  maxTurns: 2,
  retryBudgets: { formatErrors: 0, illegalActions: 0 },
  toolParams: {},
  hooks: {},
};

export default harness;
