// Constant-only candidates: the comparison of a candidate's source with its parent's (number literals masked,
// comments and the harness name ignored), and the built-in proposer leaving such candidates out unless the
// proposer config opts in, whichever mechanism made them.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { isConstantOnlyChange } from '../../activities/proposers/constant-only';
import { recordCandidateEvaluation } from '../../activities/archive';
import { readSeedHarness } from '../../domains/harnesses';
import type { BuiltinDomainName } from '../../domains/registry';
import { SandboxPool } from '../../harness-sandbox/pool';
import { fakeTrajectories, proposeInput, setUp } from './fixtures';

const pool = new SandboxPool();
after(() => pool.close());

const PARENT = `import type { Harness } from 'whale/harness';
export default {
  name: 'h0',
  systemPrompt: 'Answer in <answer>...</answer>.',
  userTemplate: 'Question {question}, give 2 facts',
  maxTurns: 2,
  retryBudgets: { formatErrors: 0, illegalActions: 1 },
  toolParams: { search: { topK: 1, maxChars: 48 } },
  hooks: { feedback(input) { return { messages: [...input.messages, { role: 'user', content: \`left: \${input.turn + 1} of 3\` }], state: input.state }; } },
} satisfies Harness;
`;

test('a change of number literals only (with a new name and comments) is constant-only', () => {
  const candidate = PARENT.replace("name: 'h0'", "name: 'h0-r1c2'").replace('maxChars: 48', 'maxChars: 200 /* longer passages */').replace('maxTurns: 2', 'maxTurns: 4');
  assert.equal(isConstantOnlyChange(PARENT, candidate), true);
  // Numbers inside a template's substitution are constants too.
  assert.equal(isConstantOnlyChange(PARENT, PARENT.replace('input.turn + 1', 'input.turn + 2')), true);
});

test('prompt text, template text, new code or no change at all is not constant-only', () => {
  assert.equal(isConstantOnlyChange(PARENT, PARENT), false, 'no change');
  assert.equal(isConstantOnlyChange(PARENT, PARENT.replace("name: 'h0'", "name: 'h1'")), false, 'a rename alone is no change');
  assert.equal(isConstantOnlyChange(PARENT, PARENT.replace('give 2 facts', 'give 3 facts')), false, 'a digit inside a prompt string is prompt text');
  assert.equal(isConstantOnlyChange(PARENT, PARENT.replace('of 3`', 'of 4`')), false, 'a digit inside template text is text');
  assert.equal(isConstantOnlyChange(PARENT, PARENT.replace('maxTurns: 2,', 'maxTurns: 2 + 1,')), false, 'new code');
  assert.equal(isConstantOnlyChange(PARENT, PARENT.replace('maxTurns: 2,', 'maxTurns: 4,\n  stopStrings: [],')), false, 'numbers and a new field');
});

/** Proposes `rounds` rounds of 3 from h0 (scored so later rounds build on them); returns each candidate's parent and source. */
async function propose(domain: BuiltinDomainName, proposer: { kind: 'builtin'; allowConstantOnly?: boolean }, rounds: number) {
  const h = await setUp(domain, pool);
  const out: Array<{ name: string; parent: string; source: string; changes: string }> = [];
  const sources = new Map<string, string>([['incoming', readSeedHarness(domain)]]);
  try {
    for (let round = 1; round <= rounds; round++) {
      const r = await h.acts.proposeHarnesses(proposeInput(h, domain, round, proposer, { seed: 3 }));
      for (const [i, c] of r.candidates.entries()) {
        const source = (await h.store.get(c.source)).toString('utf8');
        sources.set(c.name, source);
        out.push({ name: c.name, parent: c.parent, source, changes: c.changes });
        await recordCandidateEvaluation(h.archive, c.name, { successRate: 0.3 + i / 100, meanTurns: 2, meanTokens: 30, rollouts: 12, trajectoriesJsonl: fakeTrajectories(12, 3 + i), source });
      }
    }
  } finally {
    h.cleanup();
  }
  return out.map((c) => ({ ...c, constantOnly: isConstantOnlyChange(sources.get(c.parent) ?? '', c.source) }));
}

test('the built-in proposer leaves constant-only candidates out by default and lets them in when the config opts in', async () => {
  const off = await propose('search-qa', { kind: 'builtin' }, 3);
  assert.ok(off.length >= 6, `candidates without constant-only ones: ${off.length}`);
  for (const c of off) assert.equal(c.constantOnly, false, `${c.name} from ${c.parent} changes only constants: ${c.changes}`);
  const on = await propose('search-qa', { kind: 'builtin', allowConstantOnly: true }, 3);
  assert.ok(on.some((c) => c.constantOnly), `opted in, yet no constant-only candidate: ${on.map((c) => c.changes).join(' | ')}`);
});
