// A pretraining prompt variant for chess (trusted, never a proposer's catalogue): h0's layout and turn
// limits, but the prompt asks to copy one listed move and to prefer checks, so demonstrations show the
// teacher's asked LIST and check rates next to h0's plain ones (the base policy's choices then depend on
// the prompt, a lever a harness proposer can find).
import type { HarnessDefinition } from '../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'chess-pretrain-listed',
  systemPrompt: 'Solve the chess puzzle.',
  userTemplate: '{question}\nLegal: {legalMovesText}\nCopy one move from the legal moves, prefer checks (+): <answer>e2e4</answer>',
  maxTurns: 2,
  retryBudgets: { formatErrors: 0, illegalActions: 0 },
  toolParams: {},
  hooks: {},
};

export default harness;
