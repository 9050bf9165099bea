// h0 for chess: the seed harness, weak on purpose. It shows the FEN and the legal moves (checks marked
// '+') once, in the first message, with a plain "Move in UCI" prompt (it does not ask to copy a listed move
// or to prefer checks); 2 turns, no retries, and after a correct move the default feedback names the
// opponent's reply but shows neither the new position nor a new list (so a mate-in-2's second move is
// chosen from a stale list).
import type { HarnessDefinition } from '../../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'chess-h0',
  systemPrompt: 'Solve the chess puzzle.',
  userTemplate: '{question}\nLegal: {legalMovesText}\nMove in UCI: <answer>e2e4</answer>',
  maxTurns: 2,
  retryBudgets: { formatErrors: 0, illegalActions: 0 },
  toolParams: {},
  hooks: {},
};

export default harness;
