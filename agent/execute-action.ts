// Executes one parsed action of one episode against the environment: tool calls, submissions with the
// provenance checks (the answer is the model's span, and was not written into its prompts), and the
// format-error / illegal-action retry budgets. Records which environment outputs are trusted text. Returns
// the event the harness's feedback hook will see, or null when the episode ended here.

import type { DomainEnvironment, ToolSpec } from './environment';
import type { HarnessConfig, ParsedAction, TurnEvent } from './harness-contract';
import { effectiveToolParams } from './harness-contract';
import type { Episode } from './episode';
import { endEpisode, endWithFailure } from './episode';
import type { AnswerSpan, EpisodeProvenance } from './provenance';
import { inputWrittenIn, stringLeaves } from './provenance';

/** What the loop knows about the turn for its provenance checks. */
export interface TurnProvenance {
  /** The model's answer span in this turn's text (agent/provenance.ts), or null. */
  span: AnswerSpan | null;
  evidence: EpisodeProvenance;
  /** True when the action came from the loop's own parser (its format-error reasons are trusted text). */
  defaultParser: boolean;
}

export async function executeAction<Hidden>(
  ep: Episode<Hidden>,
  action: ParsedAction,
  generatedText: string,
  env: DomainEnvironment<Hidden>,
  config: HarnessConfig,
  tools: readonly ToolSpec[],
  checks: TurnProvenance,
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
    if (checks.defaultParser) checks.evidence.trust(action.reason);
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
    // A computing tool's result is the harness's text unless the model (or the task) wrote its input.
    if (!spec.computes || inputWrittenIn(action.input, [generatedText, ep.task.question])) checks.evidence.trustOutput(result.text, ...stringLeaves(result.data));
    else checks.evidence.taint(result.text);
    ep.turns[ep.turns.length - 1] = { ...record, tool: { tool: action.tool, input: action.input, params, ok: result.ok, text: result.text, data: result.data } };
    return { kind: 'tool', tool: action.tool, input: action.input, params, ok: result.ok, text: result.text, data: result.data };
  }

  // A submission: the loop, not the harness, decides whether the model really produced it.
  const violation = submissionViolation(action.answer, checks, (s) => env.normalizeAnswer(s));
  if (violation !== null) {
    endWithFailure(ep, { kind: 'contract-violation', hook: 'parseAction', reason: violation });
    return null;
  }
  const answer = env.normalizeAnswer(action.answer);
  const result = env.submit(ep.task, ep.envState, answer);
  checks.evidence.trustOutput(result.text, ...stringLeaves(result.data));
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

/**
 * Why a submitted answer is not the model's (null when it is): empty, not the turn's answer span (the
 * harness may not pick a span; `generatedText.includes` used to allow "2" out of "<answer>22</answer>"),
 * or written into the model's prompts by the harness before the model gave it.
 */
function submissionViolation(answer: string, checks: TurnProvenance, normalize: (s: string) => string): string | null {
  const normalized = normalize(answer);
  if (normalized === '') return `answer ${JSON.stringify(answer.slice(0, 80))} is empty after normalisation`;
  const span = checks.span;
  if (span === null) {
    return `answer ${JSON.stringify(normalized.slice(0, 80))} has no answer span in the model's turn: the model must write <answer>...</answer> (or a form the harness lists in answerForms)`;
  }
  if (normalize(span.text) !== normalized) {
    return `answer ${JSON.stringify(normalized.slice(0, 80))} is not the model's answer span ${JSON.stringify(normalize(span.text).slice(0, 80))} (${span.form})`;
  }
  return checks.evidence.injection(answer);
}
