// The committed synthetic puzzle file must match its generator and its puzzles must have the unique
// solutions they claim. Regenerating all 2,600 takes minutes, so a seeded sample is regenerated and
// re-proved with the public chess.js API (independent of the generator's fast internal search).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Chess } from 'chess.js';
import { DEFAULT_CHESS_OPTIONS, generatePuzzleAt } from '../../domains/chess/generator';
import { loadSyntheticPuzzles } from '../../domains/chess/puzzle-file';
import { mateInTwoFirstMoves, matingMoves, playUci, positionKey } from '../../domains/chess/rules';
import { lineIsLegal } from '../../domains/chess/tasks';
import { Rng } from '../../common/rng';

const file = loadSyntheticPuzzles({ onMalformed: 'reject' });
const puzzles = file.items;
const total = DEFAULT_CHESS_OPTIONS.mateIn1 + DEFAULT_CHESS_OPTIONS.mateIn2;

test('the committed file has every puzzle, in order, with distinct positions and legal lines', () => {
  assert.equal(puzzles.length, total);
  assert.deepEqual(file.skipped, []);
  puzzles.forEach((p, i) => assert.equal(p.id, `chess/syn/${String(i).padStart(5, '0')}`));
  assert.equal(new Set(puzzles.map((p) => positionKey(p.fen))).size, total);
  for (const p of puzzles) {
    assert.ok(lineIsLegal(p.fen, p.line), p.id);
    assert.equal(p.line.length, p.goal === 'mate in 1' ? 1 : 3, p.id);
  }
  const black = puzzles.filter((p) => p.fen.split(' ')[1] === 'b').length;
  assert.ok(black > total * 0.3 && black < total * 0.7, `${black} black-to-move puzzles`);
});

test('a seeded sample regenerates exactly from the generator', () => {
  const rng = new Rng('chess-data-sample');
  const sample = [0, total - 1, ...Array.from({ length: 4 }, () => rng.int(0, DEFAULT_CHESS_OPTIONS.mateIn1 - 1)), ...Array.from({ length: 4 }, () => rng.int(DEFAULT_CHESS_OPTIONS.mateIn1, total - 1))];
  for (const i of sample) {
    const earlier = new Set(puzzles.slice(0, i).map((p) => positionKey(p.fen)));
    assert.deepEqual(generatePuzzleAt(i, DEFAULT_CHESS_OPTIONS, earlier), puzzles[i], `puzzle ${i}`);
  }
});

test('sampled puzzles have unique solutions by the public API (depth 1 and 3 plies)', () => {
  const rng = new Rng('chess-data-unique');
  for (let k = 0; k < 40; k++) {
    const p = puzzles[rng.int(0, DEFAULT_CHESS_OPTIONS.mateIn1 - 1)];
    assert.deepEqual(matingMoves(new Chess(p.fen)), p.line, `${p.id} must have exactly one mating move`);
  }
  for (let k = 0; k < 6; k++) {
    const p = puzzles[rng.int(DEFAULT_CHESS_OPTIONS.mateIn1, total - 1)];
    const chess = new Chess(p.fen);
    assert.deepEqual(matingMoves(chess), [], `${p.id} must have no mate in one`);
    assert.deepEqual(mateInTwoFirstMoves(chess, 99), [p.line[0]], `${p.id} must have one forcing first move`);
    assert.ok(playUci(chess, p.line[0]) && playUci(chess, p.line[1]) && playUci(chess, p.line[2]) && chess.isCheckmate(), `${p.id} line must mate`);
  }
});
