// The generated reference docs (docs/reference/config.md from the zod schemas, docs/reference/cli.md from
// the commander program) must match what the code generates now: a new field, option or command without
// regenerated docs fails here.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { configReference, cliReference, staleDocs } from '../../scripts/gen-docs';
import { RunConfigV1 } from '../../workflows/run-config';
import { buildProgram } from '../../cli/main';

describe('reference docs', () => {
  it('are up to date with the schemas and the CLI', async () => {
    const stale = await staleDocs();
    assert.deepEqual(stale, [], `out of date: ${stale.join(', ')}; run \`npx tsx scripts/gen-docs.ts\` and commit the result`);
  });

  it('cover every run-config section and every CLI command and option', async () => {
    const config = await configReference();
    for (const key of Object.keys(RunConfigV1.shape)) assert.ok(config.includes(`| \`${key}\` |`), `config.md lacks run-config field ${key}`);
    const cli = await cliReference();
    for (const cmd of buildProgram().commands) {
      assert.ok(cli.includes(`## \`whale ${cmd.name()}`), `cli.md lacks command ${cmd.name()}`);
      for (const o of cmd.options) assert.ok(cli.includes(o.flags.replace(/\|/g, '\\|')), `cli.md lacks option ${o.flags} of ${cmd.name()}`);
    }
  });
});
