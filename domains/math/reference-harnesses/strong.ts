// A stronger hand-written math harness, for tests and reports only (never in a proposer's catalogue):
// tells the model to put the whole computation in one calculator call, lists the problem's numbers in
// order (so copying operands is easier), reports calculator errors with a retry, and asks for the answer.
import type { HarnessDefinition } from '../../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'math-strong',
  systemPrompt: 'Use the calculator: write all steps as one expression in <calc>...</calc>. Then reply <answer>number</answer>.',
  userTemplate: '{question}',
  maxTurns: 4,
  retryBudgets: { formatErrors: 1, illegalActions: 0 },
  toolParams: {},
  hooks: {
    formatObservation(input) {
      const numbers = input.task.question.match(/\d+(?:\.\d+)?/g) ?? [];
      return { state: input.state, text: `${input.task.question}\nNumbers in order: ${numbers.join(', ')}` };
    },
    feedback(input) {
      const e = input.event;
      if (e.kind === 'tool') {
        const content = e.ok ? `Result: ${e.text}. Reply <answer>number</answer>.` : `Calculator ${e.text}. Write one arithmetic expression.`;
        return { state: input.state, append: [{ role: 'tool', content }] };
      }
      if (e.kind === 'format-error') {
        return { state: input.state, append: [{ role: 'user', content: 'Use <calc>expression</calc> or <answer>number</answer>.' }] };
      }
      return { state: input.state, append: [{ role: 'tool', content: e.text }] };
    },
  },
};

export default harness;
