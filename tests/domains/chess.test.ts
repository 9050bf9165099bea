// Chess: the environment's transitions (correct move -> opponent reply, legal wrong move -> over,
// illegal move -> unchanged), whole-line verification, UCI-only views (no SAN; the legal list marks every
// check, mates included, with the same leading '+', and nothing shows '#'), and the fast internal-API
// search agreeing with the public chess.js API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Chess } from 'chess.js';
import { chessDomain } from '../../domains/chess';
import { createChessEnvironment } from '../../domains/chess/environment';
import { fastMateInTwoFirstMoves, fastMatingMoves } from '../../domains/chess/fast-search';
import { loadLichessCsv } from '../../domains/chess/lichess-loader';
import { legalUciMoves, legalUciMovesMarked, mateInTwoFirstMoves, matingMoves, publicLegalUciMoves } from '../../domains/chess/rules';
import { buildChessTask } from '../../domains/chess/tasks';
import { Rng } from '../../common/rng';

const env = createChessEnvironment();
const lichess = loadLichessCsv(join(__dirname, 'fixtures', 'lichess-puzzles.csv'), { onMalformed: 'skip' }).items;
const byId = (id: string) => {
  const t = lichess.find((x) => x.id === id);
  assert.ok(t, id);
  return t;
};

test('playing the whole Lichess line solves the puzzle; the opponent replies come from the line', () => {
  const task = byId('chess/lichess/00008');
  let state = env.initialState(task);
  assert.equal(state.lastOpponentMove, 'f2g3');
  const line = task.hidden.line;
  for (let i = 0; i < line.length; i += 2) {
    const r = env.submit(task, state, line[i]);
    state = r.state;
    if (i + 2 < line.length) {
      assert.equal(r.outcome, 'continue');
      assert.equal(state.lastOpponentMove, line[i + 1]);
      assert.match(r.text, new RegExp(`opponent played ${line[i + 1]}`));
    } else assert.equal(r.outcome, 'final');
  }
  assert.equal(state.status, 'solved');
  assert.equal(env.verify(task, state), 1);
  const inst = chessDomain.load({ kind: 'files', files: { puzzles: join(__dirname, 'fixtures', 'lichess-puzzles.csv') }, onMalformed: 'skip', harnessSize: 1, testSize: 1 });
  assert.deepEqual(inst.diagnose(task, state), { solverMoves: 3, solverMovesOnLine: 3, lineLength: 3, solved: true });
});

test('a legal wrong move ends the episode with reward 0 and does not reveal the solution', () => {
  const task = byId('chess/lichess/0000D');
  const s0 = env.initialState(task);
  const wrong = legalUciMoves(new Chess(s0.fen)).find((m) => m !== task.hidden.line[0]);
  assert.ok(wrong);
  const r = env.submit(task, s0, wrong);
  assert.equal(r.outcome, 'final');
  assert.equal(r.state.status, 'failed');
  assert.equal(env.verify(task, r.state), 0);
  assert.ok(!r.text.includes(task.hidden.line[0]));
});

test('illegal and malformed moves change nothing and say why', () => {
  const task = byId('chess/lichess/0000D');
  const s0 = env.initialState(task);
  for (const move of ['a1a8', 'e2e5', 'Rd8', 'hello', '']) {
    const r = env.submit(task, s0, env.normalizeAnswer(move));
    assert.equal(r.outcome, 'illegal', move);
    assert.deepEqual(r.state, s0);
    assert.ok(r.text.length > 0);
  }
  assert.equal(env.verify(task, s0), 0);
});

test('any mating move completes a mate puzzle (Lichess rule); annotations are normalised away', () => {
  // Two rooks: both Ra8# and Rb8# mate; the stored line has only one of them.
  const task = buildChessTask({ id: 't/mates', fen: '6k1/5ppp/8/8/8/8/R4PPP/1R4K1 w - - 0 1', line: ['a2a8'], goal: 'mate in 1', source: 'test' });
  const alt = env.submit(task, env.initialState(task), env.normalizeAnswer('B1B8#'));
  assert.equal(alt.outcome, 'final');
  assert.equal(env.verify(task, alt.state), 1);
});

test('views and feedback use UCI only: checks carry a leading +, a mate looks like any other check, no # anywhere', () => {
  let mates = 0;
  for (const task of lichess) {
    let state = env.initialState(task);
    const seen: string[] = [task.question, JSON.stringify(task.view)];
    const lists: string[] = [];
    const look = (obs: unknown) => {
      const o = obs as { legalMovesText?: unknown; legalMoves?: unknown; fen?: unknown } | null;
      if (o === null) return;
      const { legalMovesText, ...rest } = o;
      seen.push(JSON.stringify(rest));
      if (typeof legalMovesText === 'string') {
        lists.push(legalMovesText);
        const shownMoves = legalMovesText === '' ? [] : legalMovesText.split(' ');
        assert.deepEqual(shownMoves.map((m) => m.replace(/^\+/, '')).sort(), o.legalMoves, 'the marked list is legalMoves with marks');
        const firstQuiet = shownMoves.findIndex((m) => !m.startsWith('+'));
        assert.ok(firstQuiet < 0 || shownMoves.slice(firstQuiet).every((m) => !m.startsWith('+')), `checks come first: ${legalMovesText}`);
        const chess = new Chess(String(o.fen));
        const san = new Map(chess.moves({ verbose: true }).map((m) => [`${m.from}${m.to}${m.promotion ?? ''}`, m.san]));
        for (const shown of shownMoves) {
          const sanOf = san.get(shown.replace(/^\+/, ''));
          assert.equal(shown.startsWith('+'), /[+#]$/.test(sanOf ?? ''), `${task.id}: ${shown} is ${sanOf}`);
          if (sanOf?.endsWith('#')) mates++;
        }
      }
    };
    look(env.observe(task, state));
    for (let i = 0; i < task.hidden.line.length; i += 2) {
      const r = env.submit(task, state, task.hidden.line[i]);
      seen.push(r.text);
      look(r.data);
      state = r.state;
      look(env.observe(task, state));
    }
    for (const text of seen) assert.ok(!/[+#]/.test(text), `${task.id}: ${text.slice(0, 120)}`);
    for (const list of lists) assert.match(list, /^(\+?[a-h][1-8][a-h][1-8][qrbn]?( \+?[a-h][1-8][a-h][1-8][qrbn]?)*)?$/);
  }
  assert.ok(mates > 0, 'the fixture lines reach positions with a mating move, shown as a plain check');
});

test('the marked list agrees with the public API on random positions (checks and mates marked alike)', () => {
  const rng = new Rng('marks');
  for (let i = 0; i < 40; i++) {
    const chess = new Chess();
    for (let ply = 0; ply < rng.int(0, 30) && !chess.isGameOver(); ply++) chess.move(rng.pick(chess.moves()));
    const expected = chess.moves({ verbose: true }).map((m) => ({ uci: `${m.from}${m.to}${m.promotion ?? ''}`, check: /[+#]$/.test(m.san) }))
      .sort((a, b) => (a.uci < b.uci ? -1 : 1)).map((m) => (m.check ? `+${m.uci}` : m.uci));
    assert.deepEqual(legalUciMovesMarked(chess), expected, chess.fen());
  }
});

test('fast internal search agrees with the public chess.js API on random sparse positions', () => {
  const rng = new Rng('cross-check');
  let compared = 0;
  for (let i = 0; i < 400 && compared < 60; i++) {
    const pieces = ['K', 'k', rng.pick(['Q', 'R']), rng.pick(['R', 'B', 'N', 'P']), rng.pick(['p', 'n', 'r'])];
    const chess = new Chess();
    chess.clear();
    for (const p of pieces) {
      const sq = `${'abcdefgh'[rng.int(0, 7)]}${rng.int(2, 7)}`;
      chess.put({ type: p.toLowerCase() as 'k' | 'q' | 'r' | 'b' | 'n' | 'p', color: p === p.toUpperCase() ? 'w' : 'b' }, sq as 'a2');
    }
    let position: Chess;
    try {
      position = new Chess(chess.fen());
    } catch {
      continue;
    }
    if (position.findPiece({ type: 'k', color: 'w' }).length !== 1 || position.findPiece({ type: 'k', color: 'b' }).length !== 1) continue;
    const bk = position.findPiece({ type: 'k', color: 'b' })[0];
    if (position.isAttacked(bk, 'w') || position.isGameOver()) continue;
    compared++;
    assert.deepEqual(legalUciMoves(position), publicLegalUciMoves(position), position.fen());
    const m1 = matingMoves(position);
    assert.deepEqual(fastMatingMoves(position), m1, position.fen());
    if (compared <= 8) assert.deepEqual(fastMateInTwoFirstMoves(position, 99), mateInTwoFirstMoves(position, 99), position.fen());
  }
  assert.ok(compared >= 30, `only ${compared} positions compared`);
});
