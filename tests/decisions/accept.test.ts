// Unit tests for the accept rule and the Pareto frontier of a harness phase archive.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_HARNESS_PATIENCE, DecisionInputError, compareCandidates, initialHarnessPatience, observeHarnessRound,
  paretoFrontier, selectAccepted, type CandidateScore,
} from '../../workflows/decisions';

let nextOrder = 1;
const cand = (id: string, successRate: number, meanTurns: number, extra: Partial<CandidateScore> = {}): CandidateScore => ({
  id, successRate, meanTurns, meanTokens: meanTurns * 100, incoming: false, order: nextOrder++, ...extra,
});
const h0 = (successRate: number, meanTurns: number): CandidateScore => cand('h0', successRate, meanTurns, { incoming: true, order: 0 });

void describe('selectAccepted', () => {
  void test('the highest success rate wins, whatever its turns', () => {
    const out = selectAccepted([h0(0.5, 2), cand('h1', 0.6, 9), cand('h2', 0.55, 1)]);
    assert.equal(out.accepted.id, 'h1');
    assert.match(out.reason, /^accepted h1 .*higher success than incoming h0/);
  });

  void test('a tie on success with fewer turns is accepted, but is not a new best for patience', () => {
    const archive = [h0(0.5, 4), cand('h1', 0.5, 3)];
    const out = selectAccepted(archive);
    assert.equal(out.accepted.id, 'h1');
    assert.match(out.reason, /ties incoming .* fewer mean turns \(not a new best for patience\)/);
    // Patience sees only success: round 1 registered 0.5 (h0 included); the archive best stays 0.5.
    const round1 = observeHarnessRound(initialHarnessPatience(), 0.5, { ...DEFAULT_HARNESS_PATIENCE });
    const round2 = observeHarnessRound(round1.state, Math.max(...archive.map((c) => c.successRate)), { ...DEFAULT_HARNESS_PATIENCE });
    assert.equal(round2.decision.newBest, false);
    assert.equal(round2.decision.roundsSinceBest, 1);
  });

  void test('the incoming harness survives an exact tie on both', () => {
    const out = selectAccepted([cand('h1', 0.5, 3), h0(0.5, 3), cand('h2', 0.5, 3)]);
    assert.equal(out.accepted.id, 'h0');
    assert.match(out.reason, /^kept incoming h0 .*ties on both, the incoming harness stays/);
  });

  void test('the incoming harness survives when nothing beats it', () => {
    const out = selectAccepted([h0(0.7, 3), cand('h1', 0.6, 1), cand('h2', 0.7, 4)]);
    assert.equal(out.accepted.id, 'h0');
    assert.match(out.reason, /no candidate beats it; best challenger h2/);
  });

  void test('among tied challengers, the earlier archive order wins', () => {
    const out = selectAccepted([h0(0.1, 3), cand('late', 0.5, 2, { order: 9 }), cand('early', 0.5, 2, { order: 4 })]);
    assert.equal(out.accepted.id, 'early');
  });

  void test('an archive holding only the incoming harness keeps it', () => {
    const out = selectAccepted([h0(0.2, 2)]);
    assert.equal(out.accepted.id, 'h0');
    assert.match(out.reason, /no other candidate/);
  });

  void test('exactly one incoming candidate is required, ids unique, values in range', () => {
    assert.throws(() => selectAccepted([]), DecisionInputError);
    assert.throws(() => selectAccepted([cand('h1', 0.5, 2)]), /exactly one incoming harness.*got 0/);
    assert.throws(() => selectAccepted([h0(0.5, 2), cand('x', 0.5, 2, { incoming: true })]), /exactly one incoming harness.*got 2/);
    assert.throws(() => selectAccepted([h0(0.5, 2), cand('h0', 0.6, 2)]), /unique/);
    assert.throws(() => selectAccepted([h0(0.5, 2), cand('h1', 1.2, 2)]), DecisionInputError);
    assert.throws(() => selectAccepted([h0(0.5, 2), cand('h1', 0.5, Number.NaN)]), DecisionInputError);
  });
});

void describe('compareCandidates', () => {
  void test('order: success desc, turns asc, incoming first, order asc', () => {
    const a = cand('a', 0.6, 5, { order: 3 });
    const b = cand('b', 0.5, 1, { order: 1 });
    assert.ok(compareCandidates(a, b) < 0);
    assert.ok(compareCandidates(cand('c', 0.5, 2), cand('d', 0.5, 3)) < 0);
    assert.ok(compareCandidates(h0(0.5, 2), cand('e', 0.5, 2)) < 0);
    assert.ok(compareCandidates(cand('f', 0.5, 2, { order: 7 }), cand('g', 0.5, 2, { order: 2 })) > 0);
    assert.equal(compareCandidates(a, a), 0);
  });

  void test('on an exact tie the incoming flag outranks archive order (even if order were mis-set)', () => {
    const incomingLate = cand('h0', 0.5, 2, { incoming: true, order: 5 });
    const challengerEarly = cand('h1', 0.5, 2, { order: 1 });
    assert.ok(compareCandidates(incomingLate, challengerEarly) < 0);
    assert.equal(selectAccepted([challengerEarly, incomingLate]).accepted.id, 'h0');
  });
});

void describe('paretoFrontier', () => {
  void test('keeps the non-dominated set in archive order', () => {
    const archive = [
      cand('slow-best', 0.8, 6, { order: 3 }),
      h0(0.5, 3),
      cand('fast', 0.4, 1, { order: 1 }),
      cand('dominated', 0.5, 4, { order: 2 }),
      cand('mid', 0.6, 3, { order: 4 }),
    ];
    assert.deepEqual(paretoFrontier(archive).map((c) => c.id), ['fast', 'slow-best', 'mid']);
  });

  void test('duplicates equal on both are all kept', () => {
    const archive = [h0(0.5, 2), cand('twin', 0.5, 2, { order: 1 })];
    assert.deepEqual(paretoFrontier(archive).map((c) => c.id), ['h0', 'twin']);
  });

  void test('equal success with more turns is dominated; equal turns with less success is dominated', () => {
    const archive = [h0(0.5, 2), cand('more-turns', 0.5, 3, { order: 1 }), cand('less-success', 0.4, 2, { order: 2 })];
    assert.deepEqual(paretoFrontier(archive).map((c) => c.id), ['h0']);
  });

  void test('the cost axis can be mean tokens instead of turns', () => {
    const archive = [h0(0.5, 2), cand('token-lean', 0.5, 3, { order: 1, meanTokens: 50 })];
    // h0: 2 turns, 200 tokens; token-lean: 3 turns, 50 tokens; equal success. Each axis has its own winner.
    assert.deepEqual(paretoFrontier(archive, 'meanTokens').map((c) => c.id), ['token-lean']);
    assert.deepEqual(paretoFrontier(archive).map((c) => c.id), ['h0']);
  });

  void test('an empty archive has an empty frontier', () => assert.deepEqual(paretoFrontier([]), []));
});
