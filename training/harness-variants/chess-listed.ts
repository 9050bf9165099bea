// A pretraining prompt variant for chess (trusted, never a proposer's catalogue): h0's layout plus the
// legal-move list, without the reference harness's "copy one move" instruction, so demonstrations show
// the teacher's plain-prompt LIST rate as well as the asked one.
import type { HarnessDefinition } from '../../agent/harness-contract';

const harness: HarnessDefinition = {
  name: 'chess-pretrain-listed',
  systemPrompt: 'Solve the chess puzzle.',
  userTemplate: '{question}\nLegal: {legalMovesText}\nMove in UCI: <answer>e2e4</answer>',
  maxTurns: 2,
  retryBudgets: { formatErrors: 0, illegalActions: 0 },
  toolParams: {},
  hooks: {},
};

export default harness;
