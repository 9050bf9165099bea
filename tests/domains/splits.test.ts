// The three data roles of every built-in domain: sizes, disjointness by underlying item, and stability
// across runs (content hashes of each split are committed in split-hashes.json; a change to a generator,
// a seed or the split rule must update them deliberately).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assignSplits, hashSplit, splitsAreDisjoint } from '../../domains/common/splits';
import { Rng } from '../../common/rng';
import { DOMAINS, getDomain } from '../../domains/registry';
import type { EnvTask } from '../../domains/types';

type Expected = Record<string, Record<'weight' | 'harness' | 'test', { size: number; sha256: string }>>;
const expected = JSON.parse(readFileSync(join(__dirname, 'split-hashes.json'), 'utf8')) as Expected;

test('the registry knows the three built-in domains and names them in errors', () => {
  assert.deepEqual(Object.keys(DOMAINS).sort(), ['chess', 'math', 'search-qa']);
  assert.equal(getDomain('math').name, 'math');
  assert.throws(() => getDomain('go'), /unknown domain "go"; known domains: search-qa, math, chess/);
  assert.throws(() => getDomain('math').load({ kind: 'files', files: {}, onMalformed: 'skip' }), /missing file role "problems"/);
});

for (const name of Object.keys(DOMAINS)) {
  test(`${name}: splits are 256/256/rest, disjoint by item, and match the committed hashes`, () => {
    const instance = getDomain(name).load({ kind: 'synthetic' });
    const { weight, harness, test: testSplit } = instance.splits;
    assert.equal(harness.length, 256);
    assert.equal(testSplit.length, 256);
    assert.ok(weight.length >= 2000, `D_weight has ${weight.length}`);
    assert.ok(splitsAreDisjoint(instance.splits));
    const ids = [...weight, ...harness, ...testSplit].map((t) => t.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(instance.taskById(harness[0].id), harness[0]);
    assert.equal(instance.environment.domain, name);
    for (const split of ['weight', 'harness', 'test'] as const) {
      assert.equal(instance.splits[split].length, expected[name][split].size, `${name}/${split} size`);
      assert.equal(hashSplit(instance.splits[split]), expected[name][split].sha256, `${name}/${split} content hash`);
    }
  });
}

function toyTasks(n: number, perItem: number): EnvTask<null>[] {
  return Array.from({ length: n }, (_, i) => ({ id: `t${i}`, itemId: `item${Math.floor(i / perItem)}`, question: `q${i}`, view: {}, hidden: null }));
}

test('split assignment ignores input order and keeps item groups whole', () => {
  const tasks = toyTasks(900, 3);
  const a = assignSplits(tasks, 'seed', { harness: 30, test: 30 });
  const b = assignSplits(new Rng('shuffle').shuffle(tasks), 'seed', { harness: 30, test: 30 });
  assert.deepEqual(a.test.map((t) => t.id), b.test.map((t) => t.id));
  assert.deepEqual(a.harness.map((t) => t.id), b.harness.map((t) => t.id));
  assert.ok(splitsAreDisjoint(a));
  assert.notDeepEqual(assignSplits(tasks, 'other seed', { harness: 30, test: 30 }).test.map((t) => t.id), a.test.map((t) => t.id));
});

test('split assignment refuses too few tasks, duplicate ids, and sizes whole groups cannot fill', () => {
  assert.throws(() => assignSplits(toyTasks(10, 1), 's', { harness: 5, test: 5 }), /cannot fill/);
  const dup = toyTasks(20, 1);
  dup[1] = { ...dup[1], id: 't0' };
  assert.throws(() => assignSplits(dup, 's', { harness: 2, test: 2 }), /duplicate task id "t0"/);
  assert.throws(() => assignSplits(toyTasks(40, 4), 's', { harness: 2, test: 3 }), /whole item groups/);
});
