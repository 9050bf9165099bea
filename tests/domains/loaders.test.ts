// Real-format loaders: NQ/HotpotQA question JSONL, corpus JSONL, GSM8K JSONL and the Lichess puzzle CSV.
// Malformed lines must be reported with file and line number, then skipped and listed, or rejected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getDomain } from '../../domains/registry';
import { loadLichessCsv } from '../../domains/chess/lichess-loader';
import { MalformedLineError } from '../../domains/common/line-loader';
import { loadGsm8kJsonl } from '../../domains/math/loader';
import { loadCorpusJsonl, loadQuestionsJsonl } from '../../domains/search-qa/loader';

const fixture = (name: string): string => join(__dirname, 'fixtures', name);
const lines = (r: { skipped: { line: number }[] }): number[] => r.skipped.map((s) => s.line);

test('QA questions: HotpotQA and NQ-open lines load; malformed lines are skipped and listed', () => {
  const file = fixture('qa-questions.jsonl');
  const r = loadQuestionsJsonl(file, { onMalformed: 'skip', sourceName: 'fx' });
  assert.deepEqual(r.items.map((t) => t.id), ['search-qa/fx/5a8b57f25542995d1e6f1371', 'search-qa/fx/line2', 'search-qa/fx/7', 'search-qa/fx/8']);
  assert.deepEqual(r.items[1].hidden.answers, ['Wilhelm Conrad Röntgen']);
  assert.equal(r.items[0].view.type, 'comparison');
  // The two Tam Oru questions share their entity, so no split can separate them.
  assert.equal(r.items[2].itemId, r.items[3].itemId);
  assert.deepEqual(lines(r), [5, 6, 8, 9]);
  assert.equal(r.linesRead, 8);
  assert.ok(r.skipped.every((s) => s.file === file && s.reason.length > 0));
});

test('QA questions: reject mode fails on the first bad line with file:line', () => {
  const file = fixture('qa-questions.jsonl');
  assert.throws(() => loadQuestionsJsonl(file, { onMalformed: 'reject' }), (err: unknown) => {
    assert.ok(err instanceof MalformedLineError);
    assert.equal(err.detail.line, 5);
    assert.match(err.message, /qa-questions\.jsonl:5: missing "answer"/);
    return true;
  });
});

test('QA corpus: id/_id and text/contents variants; bad lines listed', () => {
  const r = loadCorpusJsonl(fixture('qa-corpus.jsonl'), { onMalformed: 'skip' });
  assert.deepEqual(r.items.map((d) => d.id), ['d1', 'd2', 'd3']);
  assert.equal(r.items[2].title, '');
  assert.deepEqual(lines(r), [4, 5]);
  assert.match(r.skipped[1].reason, /JSON object/);
});

test('GSM8K: final answer after ####, commas allowed; bad lines listed or rejected', () => {
  const file = fixture('gsm8k.jsonl');
  const r = loadGsm8kJsonl(file, { onMalformed: 'skip', sourceName: 'gsm8k' });
  assert.deepEqual(r.items.map((t) => t.hidden.answer), [72, 10, 2000]);
  assert.equal(r.items[2].id, 'math/gsm8k/big');
  assert.deepEqual(lines(r), [4, 5, 6]);
  assert.match(r.skipped[0].reason, /####/);
  assert.throws(() => loadGsm8kJsonl(file, { onMalformed: 'reject' }), /gsm8k\.jsonl:4:/);
});

test('Lichess CSV: header skipped, opponent move applied, solver line kept; malformed puzzles listed', () => {
  const file = fixture('lichess-puzzles.csv');
  const r = loadLichessCsv(file, { onMalformed: 'skip' });
  assert.deepEqual(r.items.map((t) => t.id), ['chess/lichess/00008', 'chess/lichess/0000D', 'chess/lichess/0009B', 'chess/lichess/mate1']);
  const first = r.items[0];
  assert.equal(first.view.fen, 'r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2b1/PqP3PP/7K w - - 0 25');
  assert.equal(first.view.lastMove, 'f2g3');
  assert.deepEqual(first.hidden.line, ['e6e7', 'b2b1', 'b3c1', 'b1c1', 'h6c1']);
  assert.equal(r.items[3].view.goal, 'mate in 1');
  assert.deepEqual(lines(r), [5, 6, 7]);
  assert.match(r.skipped[0].reason, /FEN/);
  assert.match(r.skipped[1].reason, /illegal/);
  assert.match(r.skipped[2].reason, /even number/);
  assert.throws(() => loadLichessCsv(file, { onMalformed: 'reject' }), /lichess-puzzles\.csv:5:/);
});

test('a missing file is an error that names the path', () => {
  assert.throws(() => loadGsm8kJsonl(fixture('nope.jsonl'), { onMalformed: 'skip' }), /nope\.jsonl/);
});

test('large files stream in chunks: multi-byte characters across chunk edges, CRLF, BOM, and limit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'whale-loader-'));
  try {
    const file = join(dir, 'big.jsonl');
    // ~2.6 MB: several 1 MiB chunk edges, each line full of 2- and 3-byte characters.
    const lines = Array.from({ length: 12_000 }, (_, i) => JSON.stringify({ question: `Wie viele Äpfel hat Zoë am Tag ${i}? ${'ö€'.repeat(60)}`, answer: `#### ${i}` }));
    writeFileSync(file, '\uFEFF' + lines.join('\r\n') + '\r\n');
    const r = loadGsm8kJsonl(file, { onMalformed: 'reject' });
    assert.equal(r.items.length, 12_000);
    assert.deepEqual(r.items.map((t) => t.hidden.answer), Array.from({ length: 12_000 }, (_, i) => i));
    assert.ok(r.items.every((t, i) => t.question === `Wie viele Äpfel hat Zoë am Tag ${i}? ${'ö€'.repeat(60)}`));
    const some = loadGsm8kJsonl(file, { onMalformed: 'reject', limit: 10 });
    assert.equal(some.items.length, 10);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a files source honours maxTasks and split sizes, and reports skipped lines in loadReport', () => {
  const inst = getDomain('chess').load({ kind: 'files', files: { puzzles: fixture('lichess-puzzles.csv') }, onMalformed: 'skip', harnessSize: 1, testSize: 1 });
  assert.equal(inst.splits.harness.length + inst.splits.test.length + inst.splits.weight.length, 4);
  assert.match(inst.loadReport.join('\n'), /3 skipped: .*lichess-puzzles\.csv:5 /);
  const few = getDomain('math').load({ kind: 'files', files: { problems: fixture('gsm8k.jsonl') }, onMalformed: 'skip', maxTasks: 3, harnessSize: 1, testSize: 1 });
  assert.equal(few.splits.weight.length, 1);
});
