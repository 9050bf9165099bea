// `whale bench compare --proposer <file>`: the same comparison with another harness proposer (a coding agent):
// every planned run carries it and gets its own workflow id, nothing else in its config changes, the plan
// without it is untouched, and a bad file or an invalid proposer is refused naming the fix.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { planRuns, withProposer } from '../../bench/compare';
import { compareOptions } from '../../cli/bench-command';
import { loadTemporalConfig } from '../../temporal.config';

const AGENT = { kind: 'coding-agent', command: ['claude', '-p', '{prompt}', '--output-format', 'json'] };
const OPTS = { domains: ['math', 'search-qa'], seeds: [0, 1], methods: ['whale-fixed:0.6:6', 'harness-only', 'weights-only'], budget: 15_360, sizes: 'three-epochs' as const };

describe('bench compare --proposer', () => {
  it('every run carries the proposer under its own workflow id; nothing else changes', () => {
    const config = loadTemporalConfig();
    const plain = planRuns(OPTS, config);
    assert.equal(withProposer(plain, null, OPTS.budget), plain, 'without --proposer the plan is untouched');
    const agent = withProposer(plain, AGENT, OPTS.budget);
    assert.equal(agent.length, plain.length);
    for (const [i, a] of agent.entries()) {
      const p = plain[i];
      assert.notEqual(a.workflowId, p.workflowId);
      assert.equal(a.workflowId.replace(/-[0-9a-f]{10}$/, ''), p.workflowId.replace(/-[0-9a-f]{10}$/, ''), 'the same token, seed and budget; only the config hash differs');
      assert.deepEqual((a.input.harness as { proposer: unknown }).proposer, AGENT);
      const { harness: ah, ...arest } = a.input;
      const { harness: ph, ...prest } = p.input;
      assert.deepEqual(arest, prest);
      assert.deepEqual({ ...(ah as object), proposer: undefined }, { ...(ph as object), proposer: undefined });
    }
    assert.throws(() => withProposer(plain, { kind: 'coding-agent' }, OPTS.budget), /--proposer: the run config of whale-fixed:0\.6:6 on math is invalid with this proposer: .*command/);
  });

  it('reads the proposer from a JSON file and refuses what is not a JSON object', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'whale-proposer-'));
    try {
      const base = { domains: 'math', seeds: '0,', methods: 'harness-only', budget: '15360', sizes: 'three-epochs', out: dir, parallel: '1', workers: 'auto' };
      const file = path.join(dir, 'proposer.json');
      writeFileSync(file, JSON.stringify(AGENT));
      assert.deepEqual(compareOptions({ ...base, proposer: file }).proposer, AGENT);
      assert.equal(compareOptions(base).proposer, null);
      writeFileSync(file, '["claude"]');
      assert.throws(() => compareOptions({ ...base, proposer: file }), /--proposer .*expected a JSON object like \{"kind": "coding-agent"/);
      assert.throws(() => compareOptions({ ...base, proposer: path.join(dir, 'missing.json') }), /--proposer .*missing\.json: cannot read a JSON object from it/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
