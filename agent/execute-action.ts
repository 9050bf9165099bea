// Executes one parsed action of one episode against the environment: tool calls, submissions with the
// provenance check, and the format-error / illegal-action retry budgets. Returns the event the harness's
// feedback hook will see, or null when the episode ended here.

import { checkAnswerProvenance } from './actions';
import type { DomainEnvironment, ToolSpec } from './environment';
import type { HarnessConfig, ParsedAction, TurnEvent } from './harness-contract';
import { effectiveToolParams } from './harness-contract';
import type { Episode } from './episode';
import { endEpisode, endWithFailure } from './episode';

export async function executeAction<Hidden>(
  ep: Episode<Hidden>,
  action: ParsedAction,
  generatedText: string,
  env: DomainEnvironment<Hidden>,
  config: HarnessConfig,
  tools: readonly ToolSpec[],
): Promise<TurnEvent | null> {
  const turn = ep.turn;
  const record = { turn, action };
  ep.turns.push(record);

  if (action.kind === 'none') {
    if (ep.formatErrorsLeft <= 0) {
      endEpisode(ep, 'format-errors', action.reason);
      return null;
    }
    ep.formatErrorsLeft--;
    return { kind: 'format-error', reason: action.reason, formatErrorsLeft: ep.formatErrorsLeft };
  }

  if (action.kind === 'tool') {
    const spec = tools.find((t) => t.name === action.tool);
    if (!spec) {
      endWithFailure(ep, { kind: 'contract-violation', hook: 'parseAction', reason: `parseAction returned unknown tool "${action.tool}"; tools: ${tools.map((t) => t.name).join(', ') || '(none)'}` });
      return null;
    }
    const params = effectiveToolParams(config, spec);
    const result = await env.executeTool(ep.task, ep.envState, { tool: action.tool, input: action.input, params });
    ep.envState = result.state;
    ep.turns[ep.turns.length - 1] = { ...record, tool: { tool: action.tool, input: action.input, params, ok: result.ok, text: result.text, data: result.data } };
    return { kind: 'tool', tool: action.tool, input: action.input, params, ok: result.ok, text: result.text, data: result.data };
  }

  // A submission: the loop, not the harness, decides whether the model really produced it.
  const provenance = checkAnswerProvenance(action.answer, generatedText, (s) => env.normalizeAnswer(s));
  if (!provenance.ok) {
    endWithFailure(ep, { kind: 'contract-violation', hook: 'parseAction', reason: provenance.reason });
    return null;
  }
  const answer = provenance.normalized;
  const result = env.submit(ep.task, ep.envState, answer);
  ep.turns[ep.turns.length - 1] = { ...record, submit: { answer, outcome: result.outcome, text: result.text } };
  if (result.outcome === 'illegal') {
    if (ep.illegalActionsLeft <= 0) {
      endEpisode(ep, 'illegal-actions', result.text);
      return null;
    }
    ep.illegalActionsLeft--;
    return { kind: 'illegal', answer, text: result.text, data: result.data, illegalActionsLeft: ep.illegalActionsLeft };
  }
  ep.envState = result.state;
  ep.finalAnswer = answer;
  if (result.outcome === 'final') {
    endEpisode(ep, 'answer', result.text);
    return null;
  }
  return { kind: 'continue', answer, text: result.text, data: result.data };
}
