// h0 for chess: the seed harness, weak on purpose (the FEN only, no legal-move list, 2 turns, no retries,
// and after a correct move the default feedback names the opponent's reply but not the new position).
import type { HarnessDefinition } from '../../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'chess-h0',
  systemPrompt: 'Solve the chess puzzle.',
  userTemplate: '{question}\nMove in UCI: <answer>e2e4</answer>',
  maxTurns: 2,
  retryBudgets: { formatErrors: 0, illegalActions: 0 },
  toolParams: {},
  hooks: {},
};

export default harness;
