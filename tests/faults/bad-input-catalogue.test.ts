// The bad-input catalogue is whole: at least 25 distinct cases, each used by the test file it names (which
// matches its message), and docs/faults-bad-input.md shows exactly this table. Regenerate the table with
// WHALE_WRITE_CATALOGUE=1 node --import tsx --test tests/faults/bad-input-catalogue.test.ts
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { BAD_INPUTS, catalogueTable } from './bad-input-catalogue';

const ROOT = path.resolve(__dirname, '..', '..');
const DOC = path.join(ROOT, 'docs', 'faults-bad-input.md');
const START = '<!-- catalogue:start (generated from tests/faults/bad-input-catalogue.ts) -->';
const END = '<!-- catalogue:end -->';

describe('bad-input catalogue', () => {
  it('holds at least 25 distinct malformed inputs', () => {
    assert.ok(BAD_INPUTS.length >= 25, `${BAD_INPUTS.length} cases`);
    assert.equal(new Set(BAD_INPUTS.map((c) => c.id)).size, BAD_INPUTS.length, 'ids are unique');
    assert.equal(new Set(BAD_INPUTS.map((c) => c.input)).size, BAD_INPUTS.length, 'inputs are distinct');
    assert.equal(new Set(BAD_INPUTS.map((c) => c.message.source)).size, BAD_INPUTS.length, 'each case has its own expected message');
  });

  it('every case is checked by the test file it names', () => {
    const sources = new Map<string, string>();
    for (const c of BAD_INPUTS) {
      const text = sources.get(c.test) ?? readFileSync(path.join(ROOT, c.test), 'utf8');
      sources.set(c.test, text);
      assert.ok(text.includes(`'${c.id}'`), `${c.test} does not use case '${c.id}' (fetch it with badInput('${c.id}') and match its message)`);
    }
  });

  it('docs/faults-bad-input.md shows the catalogue', () => {
    const doc = readFileSync(DOC, 'utf8');
    const a = doc.indexOf(START);
    const b = doc.indexOf(END);
    assert.ok(a >= 0 && b > a, `${DOC} must hold the markers ${START} ... ${END}`);
    const generated = `${START}\n\n${BAD_INPUTS.length} cases.\n\n${catalogueTable()}\n\n${END}`;
    const current = doc.slice(a, b + END.length);
    if (current !== generated && process.env.WHALE_WRITE_CATALOGUE === '1') {
      writeFileSync(DOC, doc.slice(0, a) + generated + doc.slice(b + END.length));
      return;
    }
    assert.equal(current, generated, 'the table in docs/faults-bad-input.md is stale: regenerate it (see the top of this file)');
  });
});
