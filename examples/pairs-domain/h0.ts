// h0 for the pairs domain: the seed harness, weak on purpose (no system prompt, 2 turns, no retries; the
// calculator only named in the user message). Harness source runs in the sandbox: type imports only.
import type { HarnessDefinition } from '../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'pairs-h0',
  systemPrompt: '',
  userTemplate: '{question}\nCalculator: <calc>expression</calc> Answer: <answer>number</answer>',
  maxTurns: 2,
  retryBudgets: { formatErrors: 0, illegalActions: 0 },
  toolParams: {},
  hooks: {},
};

export default harness;
