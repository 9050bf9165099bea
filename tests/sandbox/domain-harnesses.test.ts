// The validator on the real seed and reference harnesses the domains ship: each must pass every check
// (static, types, load in the sandbox, config, tool parameters against its domain's tools).

import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { DOMAINS } from '../../domains/registry';
import { SandboxPool } from '../../harness-sandbox/pool';
import { validateHarnessSource } from '../../harness-sandbox/validate';

const pool = new SandboxPool();
after(() => pool.close());
const ROOT = path.resolve(__dirname, '..', '..', 'domains');

void test('every harness shipped under domains/<name>/{harnesses,reference-harnesses} validates', async () => {
  let checked = 0;
  for (const [name, domain] of Object.entries(DOMAINS)) {
    const tools = domain.load({ kind: 'synthetic' }).environment.tools;
    for (const sub of ['harnesses', 'reference-harnesses']) {
      const dir = path.join(ROOT, name, sub);
      if (!existsSync(dir)) continue;
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
        const report = await validateHarnessSource(pool, readFileSync(path.join(dir, file), 'utf8'), tools);
        assert.deepEqual(report.violations, [], `${name}/${sub}/${file}`);
        checked++;
      }
    }
  }
  assert.ok(checked >= 3, `expected the domains' seed harnesses, found ${checked} files`);
});

void test('the example harness in docs/writing-a-harness.md validates against the math tools', async () => {
  const doc = readFileSync(path.resolve(__dirname, '..', '..', 'docs', 'writing-a-harness.md'), 'utf8');
  const example = /```ts\n([\s\S]*?)```/.exec(doc);
  assert.ok(example, 'the doc has a ts example');
  const report = await validateHarnessSource(pool, example[1], DOMAINS.math.load({ kind: 'synthetic' }).environment.tools);
  assert.deepEqual(report.violations, []);
});
