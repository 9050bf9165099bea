// The repository stands on its own: no tracked file names a method note kept outside it, a sibling folder
// of the checkout, an issue number or an absolute path of a build machine. One `git grep` over the tracked
// files; the only place allowed to name outside sources is the "Sources" section of docs/method.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const SELF = path.relative(ROOT, __filename).split(path.sep).join('/');
const METHOD_DOC = 'docs/method.md';

/** git grep's extended regex (case-insensitive): each alternative is one kind of outside reference. */
const PATTERN = [
  // Written as character classes so this file does not itself spell the names it forbids.
  'whale-metho[d]\\.md', // the method note the project was started from
  '\\.\\./share[d]', // a folder beside the checkout
  '/wor[k]/', '/tmp/c[i]', '/roo[t]/', // absolute paths of build machines
  '(^|[^a-z0-9_])issues? #?[0-9]+', // "issue 9", "Issue #12", "issues 3"
  '\\(#[0-9]+\\)', // "(#12)"
].join('|');

function gitGrep(cwd: string, extra: string[]): Array<{ file: string; line: number; text: string }> {
  const r = spawnSync('git', ['grep', '-n', '-I', '-i', '-E', '-e', PATTERN, ...extra], { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  // git grep exits 1 when nothing matches, 0 with matches; anything else is a failure of the check itself.
  assert.ok(r.status === 0 || r.status === 1, `git grep failed (exit ${r.status}): ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean).map((l) => {
    const m = /^(.*?):(\d+):(.*)$/.exec(l);
    assert.ok(m, `unexpected git grep line: ${l}`);
    return { file: m[1], line: Number(m[2]), text: m[3] };
  });
}

/** The 1-based line range of docs/method.md's "## Sources" section (to the next level-2 heading or the end). */
function sourcesSection(): { from: number; to: number } | null {
  const lines = readFileSync(path.join(ROOT, METHOD_DOC), 'utf8').split('\n');
  const from = lines.findIndex((l) => /^## Sources\s*$/.test(l));
  if (from < 0) return null;
  const next = lines.findIndex((l, i) => i > from && /^## /.test(l));
  return { from: from + 1, to: next < 0 ? lines.length : next };
}

test('the pattern catches every form of outside reference and leaves look-alikes alone', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'whale-outside-refs-'));
  try {
    const caught = [
      // Assembled from parts, for the same reason as the pattern.
      `see whale-${'method'}.md`, `read ../${'shared'}/style.md`, `folder /${'work'}/main/examples`, `cache /tmp/${'ci'}/x`,
      `home /${'root'}/.npm`, '// Soak (issue 9): kills', '# Results (Issue #6 acceptance)', 'done in (#12)', 'issues 3 and 4',
    ];
    const spared = ['fen 8/8/1k6/6q1/Pr6/8', 'a tissue 3 cells thick', 'https://lichess.org/F8M8OS71#53', 'math-w-17#3@0/0', 'non-issue here'];
    writeFileSync(path.join(dir, 'caught.txt'), caught.join('\n') + '\n');
    writeFileSync(path.join(dir, 'spared.txt'), spared.join('\n') + '\n');
    const hits = gitGrep(dir, ['--no-index', '--', '.']);
    assert.deepEqual(hits.filter((h) => h.file === 'caught.txt').map((h) => h.line), caught.map((_, i) => i + 1));
    assert.deepEqual(hits.filter((h) => h.file === 'spared.txt'), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no tracked file names an outside method note, a sibling folder, an issue number or a build-machine path (outside the method sources)', () => {
  const sources = sourcesSection();
  assert.ok(sources, `${METHOD_DOC} needs a "## Sources" section (the paper and the reference release)`);
  const hits = gitGrep(ROOT, ['--', '.', `:(exclude)${SELF}`]).filter((h) => !(h.file === METHOD_DOC && h.line > sources.from && h.line <= sources.to));
  assert.deepEqual(
    hits.map((h) => `${h.file}:${h.line}: ${h.text.trim().slice(0, 160)}`),
    [],
    'cite docs/method.md instead of a method note outside the repository; say what a test or script does instead of which issue asked for it; use a path relative to the repository',
  );
});
