// The harness contract's pure parts: config checks report every violation, tool parameters are checked
// against the environment, the tag grammar and the provenance rule (with property tests).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { checkAnswerProvenance, parseActionTags } from '../../agent/actions';
import { checkHarnessConfig, checkToolParams, exceedsJsonDepth } from '../../agent/harness-contract';
import { fillUserTemplate } from '../../agent/harness-defaults';
import { BASE_CONFIG } from './harness-fixtures';
import { lookupEnv } from './toy-env';

void test('checkHarnessConfig lists every violation with its path', () => {
  const v = checkHarnessConfig({ ...BASE_CONFIG, maxTurns: 0, retryBudgets: { formatErrors: 11, illegalActions: -1 }, userTemplate: '', extra: 1 });
  const where = v.map((x) => x.where).sort();
  assert.deepEqual(where, ['config', 'config.maxTurns', 'config.retryBudgets.formatErrors', 'config.retryBudgets.illegalActions', 'config.userTemplate']);
  assert.deepEqual(checkHarnessConfig(BASE_CONFIG), []);
});

void test('checkToolParams: unknown tools, unknown parameters and out-of-range values', () => {
  const v = checkToolParams({ ...BASE_CONFIG, toolParams: { lookup: { maxChars: 0, depth: 2 }, calc: {} } }, lookupEnv.tools);
  assert.equal(v.length, 3);
  assert.deepEqual(checkToolParams({ ...BASE_CONFIG, toolParams: { lookup: { maxChars: 100 } } }, lookupEnv.tools), []);
});

void test('the tag grammar: first complete known tag wins; unknown tags and unclosed tags are skipped', () => {
  const tools = lookupEnv.tools;
  assert.deepEqual(parseActionTags('x <lookup> alpha </lookup> <answer>1</answer>', tools), { kind: 'tool', tool: 'lookup', input: 'alpha' });
  assert.deepEqual(parseActionTags('<think>no</think><answer>K7</answer>', tools), { kind: 'answer', answer: 'K7' });
  assert.deepEqual(parseActionTags('<answer>open <lookup>b</lookup>', tools), { kind: 'tool', tool: 'lookup', input: 'b' });
  assert.equal(parseActionTags('<calc>1+1</calc>', tools).kind, 'none');
});

void test('property: a tagged answer always passes provenance; text outside the generation never does', () => {
  const norm = (s: string) => s.toLowerCase().replace(/\s+/g, ' ').trim();
  fc.assert(
    fc.property(fc.string(), fc.stringMatching(/^[a-z0-9]{1,12}$/), fc.string(), (pre, answer, post) => {
      const text = `${pre}<answer>${answer}</answer>${post}`;
      const parsed = parseActionTags(text, []);
      if (parsed.kind !== 'answer') return true; // pre may contain an earlier complete <answer> tag
      return checkAnswerProvenance(parsed.answer, text, norm).ok;
    }),
  );
  fc.assert(
    fc.property(fc.stringMatching(/^[a-z]{0,20}$/), fc.stringMatching(/^[0-9]{3,8}$/), (text, answer) => {
      return !checkAnswerProvenance(answer, text, norm).ok;
    }),
  );
  assert.equal(checkAnswerProvenance('  ', 'abc', norm).ok, false, 'an empty answer is never provenanced');
});

void test('fillUserTemplate fills question, tools and view fields, and leaves unknown placeholders visible', () => {
  const text = fillUserTemplate('{question} [{name}] {missing}\n{tools}', { id: 't', question: 'Q?', view: { name: 'alpha' } }, {}, lookupEnv.tools);
  assert.equal(text, 'Q? [alpha] {missing}\n<lookup>...</lookup>: look up the code of a name');
});

void test('exceedsJsonDepth counts nesting iteratively, also at hostile depths', () => {
  let deep: unknown = 1;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.equal(exceedsJsonDepth(deep, 64), true);
  assert.equal(exceedsJsonDepth({ a: [{ b: 1 }] }, 3), false);
  assert.equal(exceedsJsonDepth({ a: [{ b: {} }] }, 3), true);
  assert.equal(exceedsJsonDepth('text', 0), false);
});
