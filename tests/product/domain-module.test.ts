// The domain-module contract without a server: the example folder loads and splits; a module that does
// not fit fails with one line per problem; references pin the folder's content and a change is refused.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ROOT } from '../workflows/env';
import {
  domainFiles, domainLabel, DomainModuleError, hashDomainFolder, loadDomainModule, loadPinnedDomainModule, resolveDomainArgument,
} from '../../domains/external';
import { createDomainCache, seedHarnessOf } from '../../workers/domain-cache';

const EXAMPLE = path.join(ROOT, 'examples', 'pairs-domain');
const tmp = mkdtempSync(path.join(tmpdir(), 'whale-domain-module-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function copyExample(name: string): string {
  const dir = path.join(tmp, name);
  for (const rel of domainFiles(EXAMPLE)) cpSync(path.join(EXAMPLE, rel), path.join(dir, rel));
  return dir;
}

describe('domain modules', () => {
  it('the example folder loads, validates and splits; a copy elsewhere has the same hash and works from the worker cache', () => {
    const m = loadDomainModule(EXAMPLE);
    const s = m.instance().splits;
    assert.deepEqual([s.weight.length, s.harness.length, s.test.length], [2444, 128, 128]);
    const copy = copyExample('copy');
    assert.equal(hashDomainFolder(copy), m.sha256);
    const ref = resolveDomainArgument('./copy', tmp);
    assert.equal(ref, `file://${copy}#sha256=${m.sha256}`);
    assert.equal(domainLabel(ref), 'copy');
    assert.equal(resolveDomainArgument('math', tmp), 'math');
    const inst = createDomainCache()(ref);
    assert.equal(inst.splits.test[0].id, s.test[0].id);
    assert.match(seedHarnessOf(ref), /name: 'pairs-h0'/);
    const t = inst.splits.test[0];
    const st = inst.environment.submit(t, inst.environment.initialState(t), String((t.hidden as { answer: number }).answer));
    assert.equal(inst.environment.verify(t, st.state), 1);
  });

  it('refuses a folder whose content changed since it was pinned, and an unpinned reference in a worker', () => {
    const copy = copyExample('changing');
    const ref = resolveDomainArgument(copy, tmp);
    writeFileSync(path.join(copy, 'extra.txt'), 'x');
    assert.throws(() => loadPinnedDomainModule(ref), (e: Error) => e instanceof DomainModuleError && /changed since the run started; restore it/.test(e.message));
    assert.throws(() => loadPinnedDomainModule(`file://${copy}`), /not a pinned domain reference/);
    assert.throws(() => loadPinnedDomainModule('math'), /not a pinned domain reference/);
  });

  it('a module that does not fit the contract fails with one line per problem', () => {
    const bad = path.join(tmp, 'bad');
    mkdirSync(bad);
    writeFileSync(path.join(bad, 'index.ts'), "export default { apiVersion: 2, name: 'Bad', environment: { tools: [{ name: 'answer', description: 'x', params: {} }] }, tasks: [] };\n");
    assert.throws(() => loadDomainModule(bad), (e: Error) => {
      for (const p of ['apiVersion: apiVersion must be 1', 'name: name must be lowercase', 'environment.verify: must be a function', 'environment.tools.0.name: "answer" is reserved', 'tasks: must be a function', 'seedHarness:', 'basePolicy:']) {
        assert.ok(e.message.includes(p), `${p} missing from:\n${e.message}`);
      }
      return e instanceof DomainModuleError;
    });
    assert.throws(() => loadDomainModule(path.join(tmp, 'missing')), /does not exist/);
  });

  it('checks files and tasks: seed harness outside the folder, too few tasks for the splits, a malformed task', () => {
    const outside = copyExample('outside');
    writeFileSync(path.join(outside, 'index.ts'), "import base from './base';\nexport default { ...base, seedHarness: '../copy/h0.ts' };\n");
    cpSync(path.join(EXAMPLE, 'index.ts'), path.join(outside, 'base.ts'));
    assert.throws(() => loadDomainModule(outside), /seedHarness "..\/copy\/h0.ts" must be inside the domain folder/);
    const few = copyExample('few');
    writeFileSync(path.join(few, 'index.ts'), "import base from './base';\nexport default { ...base, tasks: () => base.tasks().slice(0, 200) };\n");
    cpSync(path.join(EXAMPLE, 'index.ts'), path.join(few, 'base.ts'));
    assert.throws(() => loadDomainModule(few).instance(), /200 tasks cannot fill D_test \(128\) \+ D_harness \(128\)/);
    const malformed = copyExample('malformed');
    writeFileSync(path.join(malformed, 'index.ts'), "import base from './base';\nexport default { ...base, tasks: () => [{ id: '', itemId: 'x', question: 'q', view: {} }] };\n");
    cpSync(path.join(EXAMPLE, 'index.ts'), path.join(malformed, 'base.ts'));
    assert.throws(() => loadDomainModule(malformed).instance(), /task 0 is not a valid task[\s\S]*id:/);
  });
});
