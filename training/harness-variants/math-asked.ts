// A pretraining prompt variant for math (trusted, never a proposer's catalogue): h0's turn budget with an
// instruction to use the calculator, so demonstrations pair that phrase with the teacher's TOOL choice.
import type { HarnessDefinition } from '../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'math-pretrain-asked',
  systemPrompt: 'Use the calculator for every problem.',
  userTemplate: '{question}\nCalculator: <calc>expression</calc> Answer: <answer>number</answer>',
  maxTurns: 2,
  retryBudgets: { formatErrors: 0, illegalActions: 0 },
  toolParams: {},
  hooks: {},
};

export default harness;
