// Source editing the built-in proposer relies on: literal config reads, string literals that round-trip,
// the prompt-only comparison (comments and formatting ignored, anything else named), and hooks added only
// where a harness is typed and never over a hand-written hook.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyEdits, parseHarnessSource, readLiteralConfig, replaceInitializer, tsString } from '../../activities/proposers/harness-source';
import { readHooks, setHooks } from '../../activities/proposers/hook-templates';
import { promptOnlyDifferences } from '../../activities/proposers/validation';
import { readSeedHarness } from '../../domains/harnesses';

const h0 = readSeedHarness('search-qa');

test('literal config is read from h0 and a replaced prompt round-trips through tsString', () => {
  const info = parseHarnessSource(h0);
  assert.ok(info);
  assert.deepEqual(readLiteralConfig(info), {
    name: 'search-qa-h0', systemPrompt: 'Answer the question.', userTemplate: '{question}\nSearch: <search>words</search> Answer: <answer>answer</answer>',
    maxTurns: 2, retryBudgets: { formatErrors: 0, illegalActions: 0 }, toolParams: { search: { topK: 1, docChars: 48 } },
  });
  const tricky = "It's a \\ back\nslash\t'quote' `tick` ${x}";
  const edit = replaceInitializer(info, 'systemPrompt', tsString(tricky));
  assert.ok(edit);
  const next = parseHarnessSource(applyEdits(h0, [edit]));
  assert.ok(next);
  assert.equal(readLiteralConfig(next).systemPrompt, tricky);
});

test('prompt-only comparison ignores comments and layout, names every other change', () => {
  assert.deepEqual(promptOnlyDifferences(h0, h0.replace('// h0 for search QA', '// another comment').replace("systemPrompt: 'Answer the question.'", "systemPrompt:   'Search, then answer.'")), []);
  assert.deepEqual(promptOnlyDifferences(h0, h0.replace('maxTurns: 2', 'maxTurns: 3').replace('topK: 1', 'topK: 2')), ['maxTurns', 'toolParams']);
  assert.deepEqual(promptOnlyDifferences(h0, h0.replace("name: 'search-qa-h0'", "name: 'x'")), ['name']);
  assert.deepEqual(promptOnlyDifferences(h0, h0 + '\nconst extra = 1;\n'), ['code outside the harness object']);
});

test('hooks are added only to typed harnesses and never over a hand-written hook', () => {
  const untyped = parseHarnessSource("export default { name: 'x', systemPrompt: '', userTemplate: '{question}', maxTurns: 2, retryBudgets: { formatErrors: 0, illegalActions: 0 }, toolParams: {}, hooks: {} };");
  assert.ok(untyped && !untyped.typed);
  assert.equal(setHooks(untyped, [{ hook: 'parseAction', plan: { firstTool: true } }], '<answer>x</answer>'), null);
  const handWritten = parseHarnessSource(h0.replace('hooks: {}', 'hooks: {\n    feedback(input) {\n      return { state: input.state };\n    },\n  }'));
  assert.ok(handWritten?.typed);
  assert.deepEqual(readHooks(handWritten).map((h) => [h.name, h.plan]), [['feedback', null]]);
  assert.equal(setHooks(handWritten, [{ hook: 'feedback', plan: { annotateTool: true, toolChars: 100, nudge: false, fields: [], syntaxReminder: false } }], '<answer>x</answer>'), null);
  // A built-in hook is re-rendered in place with its new plan.
  const typed = parseHarnessSource(h0);
  assert.ok(typed);
  const once = applyEdits(h0, setHooks(typed, [{ hook: 'feedback', plan: { annotateTool: false, toolChars: 0, nudge: true, fields: [], syntaxReminder: true } }], '<answer>x</answer>') ?? []);
  const info2 = parseHarnessSource(once);
  assert.ok(info2);
  const twice = applyEdits(once, setHooks(info2, [{ hook: 'feedback', plan: { annotateTool: true, toolChars: 300, nudge: true, fields: [], syntaxReminder: true } }], '<answer>x</answer>') ?? []);
  const hooks = readHooks(parseHarnessSource(twice) ?? info2);
  assert.equal(hooks.length, 1);
  assert.deepEqual(hooks[0].plan, { hook: 'feedback', plan: { annotateTool: true, toolChars: 300, nudge: true, fields: [], syntaxReminder: true } });
});
