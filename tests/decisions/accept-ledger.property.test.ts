// Property tests for the accept rule, the Pareto frontier, the ledger and the test tracker.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  addSearch, addTest, addTraining, budgetRollouts, compareCandidates, dominates, emptyLedger, emptyTestTracker,
  paretoFrontier, recordTestEval, selectAccepted, type CandidateScore, type RolloutLedger, type TestEvaluation,
} from '../../workflows/decisions';
import { deepFreeze, jsonRoundTrip } from './helpers';

// Small value grids so exact ties on success and turns are common.
const scoreArb = fc.record({
  successRate: fc.integer({ min: 0, max: 8 }).map((k) => k / 8),
  meanTurns: fc.integer({ min: 1, max: 6 }).map((k) => k / 2),
  meanTokens: fc.integer({ min: 0, max: 500 }),
});
/** An archive: h0 at order 0 (incoming) plus challengers at orders 1..n, shuffled. */
const archiveArb: fc.Arbitrary<CandidateScore[]> = fc
  .array(scoreArb, { minLength: 1, maxLength: 12 })
  .chain((scores) => fc.shuffledSubarray(
    scores.map((s, i): CandidateScore => ({ ...s, id: `h${i}`, incoming: i === 0, order: i })),
    { minLength: scores.length, maxLength: scores.length },
  ));

void describe('accept rule properties', () => {
  void test('the accepted candidate is never beaten under compareCandidates', () => {
    fc.assert(fc.property(archiveArb, (archive) => {
      const { accepted } = selectAccepted(archive);
      for (const c of archive) assert.ok(compareCandidates(accepted, c) <= 0, `${c.id} beats ${accepted.id}`);
    }));
  });

  void test('the accepted candidate has the top success rate, the fewest turns among those, and is h0 on an exact tie', () => {
    fc.assert(fc.property(archiveArb, (archive) => {
      const { accepted } = selectAccepted(archive);
      const topSuccess = Math.max(...archive.map((c) => c.successRate));
      const fewestTurns = Math.min(...archive.filter((c) => c.successRate === topSuccess).map((c) => c.meanTurns));
      assert.equal(accepted.successRate, topSuccess);
      assert.equal(accepted.meanTurns, fewestTurns);
      const incoming = archive.find((c) => c.incoming) as CandidateScore;
      if (incoming.successRate === topSuccess && incoming.meanTurns === fewestTurns) assert.equal(accepted.id, incoming.id);
    }));
  });

  void test('the result does not depend on the archive\'s array order', () => {
    fc.assert(fc.property(archiveArb, (archive) => {
      assert.equal(selectAccepted(archive).accepted.id, selectAccepted([...archive].reverse()).accepted.id);
    }));
  });

  void test('compareCandidates is antisymmetric and transitive on archives', () => {
    fc.assert(fc.property(archiveArb, (archive) => {
      for (const a of archive) for (const b of archive) {
        assert.ok(Math.sign(compareCandidates(a, b)) === -Math.sign(compareCandidates(b, a)), `${a.id} vs ${b.id}`);
        for (const c of archive) {
          if (compareCandidates(a, b) <= 0 && compareCandidates(b, c) <= 0) assert.ok(compareCandidates(a, c) <= 0);
        }
      }
    }));
  });
});

void describe('Pareto frontier properties', () => {
  void test('the frontier is non-dominated, and every other candidate is dominated by a frontier member', () => {
    fc.assert(fc.property(archiveArb, (archive) => {
      const frontier = paretoFrontier(archive);
      for (const f of frontier) assert.ok(!archive.some((c) => dominates(c, f)), `${f.id} is dominated`);
      for (const c of archive) {
        if (frontier.includes(c)) continue;
        assert.ok(frontier.some((f) => dominates(f, c)), `${c.id} is off the frontier but not dominated by it`);
      }
    }));
  });

  void test('sorted by archive order, a subset, and always holds the accepted candidate', () => {
    fc.assert(fc.property(archiveArb, (archive) => {
      const frontier = paretoFrontier(archive);
      for (let i = 1; i < frontier.length; i++) assert.ok(frontier[i - 1].order < frontier[i].order);
      for (const f of frontier) assert.ok(archive.includes(f));
      assert.ok(frontier.includes(selectAccepted(archive).accepted));
    }));
  });

  void test('neither function mutates the archive', () => {
    fc.assert(fc.property(archiveArb, (archive) => {
      const before = structuredClone(archive);
      const frozen = deepFreeze(archive);
      selectAccepted(frozen);
      paretoFrontier(frozen);
      paretoFrontier(frozen, 'meanTokens');
      assert.deepEqual(archive, before);
    }));
  });
});

type LedgerOp = { kind: 'training' | 'search' | 'test'; n: number };
const opsArb: fc.Arbitrary<LedgerOp[]> = fc.array(
  fc.record({ kind: fc.constantFrom('training' as const, 'search' as const, 'test' as const), n: fc.nat({ max: 10_000 }) }),
  { maxLength: 40 },
);
const applyOp = (l: RolloutLedger, op: LedgerOp): RolloutLedger =>
  op.kind === 'training' ? addTraining(l, op.n) : op.kind === 'search' ? addSearch(l, op.n) : addTest(l, op.n);

void describe('ledger and tracker properties', () => {
  void test('the budget equals training + search, counters are sums, inputs untouched, JSON round-trips', () => {
    fc.assert(fc.property(opsArb, (ops) => {
      let ledger = emptyLedger();
      for (const op of ops) {
        const before = structuredClone(ledger);
        const next = applyOp(deepFreeze(ledger), op);
        assert.deepEqual(ledger, before);
        ledger = next;
      }
      const sum = (kind: LedgerOp['kind']) => ops.filter((o) => o.kind === kind).reduce((a, o) => a + o.n, 0);
      assert.deepEqual(ledger, { training: sum('training'), search: sum('search'), test: sum('test') });
      assert.equal(budgetRollouts(ledger), ledger.training + ledger.search);
      assert.deepEqual(jsonRoundTrip(ledger), ledger);
    }));
  });

  void test('tracker best is the max, final the last, inputs untouched, JSON round-trips', () => {
    const entryArb: fc.Arbitrary<TestEvaluation> = fc.record({
      atWeightStep: fc.nat({ max: 1000 }), atRollouts: fc.nat({ max: 1_000_000 }),
      meanAt8: fc.integer({ min: 0, max: 800 }).map((k) => k / 800), label: fc.string({ maxLength: 20 }),
    });
    fc.assert(fc.property(fc.array(entryArb, { minLength: 1, maxLength: 20 }), (entries) => {
      let tracker = emptyTestTracker();
      for (const entry of entries) {
        const before = structuredClone(tracker);
        const next = recordTestEval(deepFreeze(tracker), deepFreeze(entry));
        assert.deepEqual(tracker, before);
        tracker = next;
      }
      assert.equal(tracker.best, Math.max(...entries.map((e) => e.meanAt8)));
      assert.equal(tracker.final, entries[entries.length - 1].meanAt8);
      // fast-check records have a null prototype; compare the fields.
      assert.deepEqual(tracker.evaluations, entries.map((e) => ({ ...e })));
      assert.deepEqual(jsonRoundTrip(tracker), tracker);
    }));
  });
});
