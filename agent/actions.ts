// The action tag grammar shared by every domain, and the loop's provenance check on answers.
// Grammar: a tool call is `<NAME>input</NAME>` for a tool the environment offers; a final answer or move
// is `<answer>text</answer>`. The first complete tag in the turn's text is the action.

import type { ToolSpec } from './environment';
import type { ParsedAction } from './harness-contract';

export const ANSWER_TAG = 'answer';

/** Closing tags the sampler may stop on, so a turn ends right after its action. */
export function actionStopStrings(tools: readonly ToolSpec[]): string[] {
  return [`</${ANSWER_TAG}>`, ...tools.map((t) => `</${t.name}>`)];
}

/** The default parser: the first complete `<answer>` or known-tool tag; otherwise a format error. */
export function parseActionTags(text: string, tools: readonly ToolSpec[]): ParsedAction {
  const names = new Set([ANSWER_TAG, ...tools.map((t) => t.name)]);
  const open = /<([a-z][a-z0-9_]*)>/g;
  for (let m = open.exec(text); m !== null; m = open.exec(text)) {
    const name = m[1];
    if (!names.has(name)) continue;
    const start = m.index + m[0].length;
    const end = text.indexOf(`</${name}>`, start);
    if (end < 0) continue;
    const body = text.slice(start, end).trim();
    if (name === ANSWER_TAG) return { kind: 'answer', answer: body };
    return { kind: 'tool', tool: name, input: body };
  }
  const known = [...names].map((n) => `<${n}>...</${n}>`).join(' or ');
  return { kind: 'none', reason: `no complete action tag found; expected ${known}` };
}

export type ProvenanceCheck = { ok: true; normalized: string } | { ok: false; reason: string };

/**
 * The answer must be a verbatim span of the text the model generated in that turn, after the domain's
 * normalisation: normalize(answer) non-empty and contained in normalize(generatedText). A harness can
 * reformat how an answer is extracted, never invent one.
 */
export function checkAnswerProvenance(answer: string, generatedText: string, normalize: (s: string) => string): ProvenanceCheck {
  const normalized = normalize(answer);
  if (normalized.length === 0) return { ok: false, reason: `answer ${JSON.stringify(answer.slice(0, 80))} is empty after normalisation` };
  if (!normalize(generatedText).includes(normalized)) {
    return { ok: false, reason: `answer ${JSON.stringify(normalized.slice(0, 80))} is not a span of the text the model generated this turn` };
  }
  return { ok: true, normalized };
}
