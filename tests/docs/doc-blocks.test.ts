// The doc-test marker grammar and command extraction on small Markdown samples: an unmarked block, a bad
// marker, per-line directives, continuations, console prompts, and synopsis lines expanded into commands.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { expandSynopsis, shellBlocks } from './doc-blocks';

describe('doc-test markers', () => {
  it('an unmarked shell block is a problem naming the fix; other languages need none', () => {
    const [b, ...rest] = shellBlocks('x.md', 'text\n\n```sh\nnode bin/whale.js list\n```\n\n```json\n{}\n```\n');
    assert.equal(rest.length, 0);
    assert.match(b.problems.join(), /x\.md:3: a ```sh block without a marker: put <!-- doc-test: run -->/);
  });

  it('reads per-line directives, continuations and console prompts', () => {
    const md = [
      '<!-- doc-test: run lines=1; skip lines=3 reason="takes hours"; starts timeout=5s expect="ready; go" -->',
      '```console',
      '$ whale list',
      'some output',
      '$ whale dev \\',
      '    --headless',
      '# a comment',
      '$ whale bench compare',
      '```',
    ].join('\n');
    const [b] = shellBlocks('y.md', md);
    assert.deepEqual(b.problems, []);
    assert.deepEqual(b.commands.map((c) => [c.index, c.line, c.directive.kind, c.text]), [
      [1, 3, 'run', 'whale list'],
      [2, 5, 'starts', 'whale dev \\\n    --headless'],
      [3, 8, 'skip', 'whale bench compare'],
    ]);
    assert.equal(b.commands[1].directive.options.expect, 'ready; go');
  });

  it('refuses unknown kinds, a skip without a reason and a starts without expect', () => {
    const problems = (marker: string) => shellBlocks('z.md', `${marker}\n\`\`\`sh\nls\n\`\`\``)[0].problems.join('\n');
    assert.match(problems('<!-- doc-test: maybe -->'), /unknown doc-test kind "maybe"/);
    assert.match(problems('<!-- doc-test: skip -->'), /skip needs reason=/);
    assert.match(problems('<!-- doc-test: starts timeout=3s -->'), /starts needs expect=/);
    assert.match(problems('<!-- doc-test: run lines=2 -->'), /command 1 .* is covered by no directive|lines= names command 2/);
  });

  it('expands a synopsis: alternatives, optional groups dropped, placeholders filled', () => {
    assert.deepEqual(expandSynopsis('whale worker --queue a|b [--json-logs] --id <workflow id>', { 'workflow id': 'w1' }), [
      'whale worker --queue a --id w1', 'whale worker --queue b --id w1',
    ]);
    assert.deepEqual(expandSynopsis('cat x | grep y', {}), ['cat x | grep y'], 'a pipe is not an alternative');
    assert.throws(() => expandSynopsis('whale agent run <bundle>', {}), /no value for placeholder\(s\) <bundle>/);
  });
});
