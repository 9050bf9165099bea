// A stronger hand-written chess harness, for tests and reports only (never in a proposer's catalogue):
// shows the legal moves (UCI, checks marked '+', from the environment's visible list), asks to copy one
// and to prefer checks, replaces the conversation with the new position and list after every opponent
// reply, re-shows the list after an illegal move, accepts a bare UCI move as the answer, and gives retries.
// It never chooses a move: every answer is a span the model wrote.
import type { HarnessDefinition } from '../../../agent/harness-contract';

function legalList(obs: Record<string, unknown>): string {
  return typeof obs.legalMovesText === 'string' ? obs.legalMovesText : '';
}

const harness: HarnessDefinition = {
  name: 'chess-strong',
  systemPrompt: 'Solve the chess puzzle. Copy one move from the legal moves, prefer checks (+): <answer>move</answer>.',
  userTemplate: '{question}\nLegal: {legalMovesText}',
  maxTurns: 8,
  retryBudgets: { formatErrors: 2, illegalActions: 3 },
  toolParams: {},
  // A bare move counts as the model's answer only where the harness lists the token form.
  answerForms: ['token'],
  hooks: {
    parseAction(input) {
      const tagged = /<answer>\s*([^<]*?)\s*<\/answer>/.exec(input.text);
      if (tagged) return { state: input.state, action: { kind: 'answer', answer: tagged[1] } };
      const bare = /\b[a-h][1-8][a-h][1-8][qrbn]?\b/.exec(input.text);
      if (bare) return { state: input.state, action: { kind: 'answer', answer: bare[0] } };
      return { state: input.state, action: { kind: 'none', reason: 'no move found' } };
    },
    feedback(input) {
      const e = input.event;
      if (e.kind === 'continue') {
        const d = e.data !== null && typeof e.data === 'object' && !Array.isArray(e.data) ? e.data : {};
        const fen = typeof d.fen === 'string' ? d.fen : '';
        const legal = typeof d.legalMovesText === 'string' ? d.legalMovesText : legalList(input.observation);
        // Context rewriting: only the new position matters, so drop the old ones (long Lichess lines would
        // otherwise overflow a 1,024-token context).
        const system = input.messages.filter((m) => m.role === 'system');
        return { state: input.state, replace: [...system, { role: 'user', content: `${e.text}. Your move. FEN: ${fen}\nLegal: ${legal}` }] };
      }
      if (e.kind === 'illegal') {
        return { state: input.state, append: [{ role: 'user', content: `${e.text}. Legal: ${legalList(input.observation)}` }] };
      }
      if (e.kind === 'format-error') {
        return { state: input.state, append: [{ role: 'user', content: 'Reply <answer>move</answer> with a move from the legal list.' }] };
      }
      return { state: input.state, append: [{ role: 'tool', content: e.text }] };
    },
  },
};

export default harness;
