// Harness sources for tests: a plain harness (defaults only) and builders for harnesses with hooks.
// They are TypeScript source strings, exactly what a proposer would write to a file.

import type { HarnessConfig } from '../../agent/harness-contract';

export const BASE_CONFIG: HarnessConfig = {
  name: 'test-h0',
  systemPrompt: 'You answer questions.',
  userTemplate: 'Question: {question}\nTools:\n{tools}',
  maxTurns: 4,
  retryBudgets: { formatErrors: 1, illegalActions: 1 },
  toolParams: {},
};

/** A harness module with the given config overrides and hook bodies (object-literal method source). */
export function harnessSource(config: Partial<HarnessConfig> = {}, hooks = '', preamble = ''): string {
  return `import type { HarnessDefinition } from '../../agent/harness-contract';
${preamble}
const harness: HarnessDefinition = {
  ...${JSON.stringify({ ...BASE_CONFIG, ...config })},
  hooks: {
${hooks}
  },
};
export default harness;
`;
}

/** A realistic harness using every hook and the helpers: what a seed harness looks like. */
export const FULL_HOOKS_SOURCE = harnessSource(
  { name: 'test-full', toolParams: { lookup: { maxChars: 30 } } },
  `
    setup(input) {
      return { state: { asked: input.task.question, toolCalls: 0 } };
    },
    formatObservation(input) {
      return { state: input.state, text: fillTemplate('Q: {q}\\nUse <lookup>name</lookup>, then <answer>code</answer>.', { q: input.task.question }) };
    },
    parseAction(input) {
      const answer = extractTag(input.text, 'answer');
      if (answer !== null) return { state: input.state, action: { kind: 'answer', answer } };
      const name = extractTag(input.text, 'lookup');
      if (name !== null) return { state: input.state, action: { kind: 'tool', tool: 'lookup', input: normalizeWhitespace(name) } };
      return { state: input.state, action: { kind: 'none', reason: 'no tag' } };
    },
    feedback(input) {
      const s = input.state as { asked: string; toolCalls: number };
      const e = input.event;
      const text = e.kind === 'tool' ? 'Result: ' + truncate(e.text, 40) : e.kind === 'format-error' ? 'Use the tags.' : e.text;
      return { state: { ...s, toolCalls: s.toolCalls + (e.kind === 'tool' ? 1 : 0) }, append: [{ role: 'tool', content: text }] };
    },
    shouldStop(input) {
      const s = input.state as { toolCalls: number };
      return { stop: s.toolCalls >= 3, reason: 'too many lookups' };
    },`,
  "import { extractTag, fillTemplate, normalizeWhitespace, truncate } from 'whale:helpers';",
);
