// The budget gates of protocol 'equal': worked examples at the comparison preset's sizes, edge cases at the
// boundary (exactly enough, one short), the exhaustion streak, the evaluation grid and the refusal of inputs
// no rule can mean.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DecisionInputError, gridPointsDue, harnessPhaseCosts, harnessPhaseGate, proposalRoundGate, proposerExhausted, restOfBudget,
  unproductiveRoundStreak, weightStepGate, type RoundRow,
} from '../../workflows/decisions';

// The comparison preset: 64 x 8 per step, D_harness 128 tasks x 3 candidates, 1 rollout per task.
const STEP = 512;
const COSTS = harnessPhaseCosts(128, 3, 1);

void describe('budget gates', () => {
  test('harness costs: round 0 scores one harness, a proposal round M harnesses', () => {
    assert.deepEqual(COSTS, { round0: 128, proposalRound: 384 });
    assert.deepEqual(harnessPhaseCosts(10, 2, 3), { round0: 30, proposalRound: 60 });
  });

  test('rest of the budget never goes below 0', () => {
    assert.equal(restOfBudget(15_360, 15_000), 360);
    assert.equal(restOfBudget(100, 130), 0);
  });

  test('a weight step needs its whole cost', () => {
    assert.equal(weightStepGate(512, STEP).allowed, true);
    assert.equal(weightStepGate(511, STEP).allowed, false);
    assert.match(weightStepGate(511, STEP).rule, /budget spent: rest 511 rollouts < one weight step of 512/);
  });

  test('WHALE fixed (0.6, 6): a harness phase needs round 0 + 5 rounds at cap + one weight step', () => {
    const needed = 128 + 5 * 384 + 512;
    assert.equal(harnessPhaseGate(needed, COSTS, 5, STEP).allowed, true);
    assert.equal(harnessPhaseGate(needed - 1, COSTS, 5, STEP).allowed, false);
    assert.equal(harnessPhaseGate(needed - 1, COSTS, 5, STEP).needed, 2560);
    assert.match(harnessPhaseGate(needed - 1, COSTS, 5, STEP).rule, /^harness phase not affordable: rest 2559 < round 0 \(128\) \+ 5 proposal rounds at cap \(384 each\) \+ reserve 512 = 2560$/);
  });

  test('WHALE adaptive: the cap is the patience rule\'s 15 rounds', () => {
    assert.equal(harnessPhaseGate(6400, COSTS, 15, STEP).allowed, true);
    assert.equal(harnessPhaseGate(6399, COSTS, 15, STEP).allowed, false);
  });

  test('a proposal round needs its cap plus the reserve; a last harness stage keeps no reserve', () => {
    assert.equal(proposalRoundGate(896, 384, 512).allowed, true);
    assert.equal(proposalRoundGate(895, 384, 512).allowed, false);
    assert.equal(proposalRoundGate(384, 384, 0).allowed, true);
    assert.equal(proposalRoundGate(383, 384, 0).allowed, false);
  });
});

const row = (round: number, evaluated: boolean, sha: string): RoundRow => ({ round, evaluated, sourceSha256: sha });

void describe('proposer exhaustion', () => {
  test('rounds with no scored candidate, only invalid ones or only copies count; a new harness resets', () => {
    const rows = [
      row(0, true, 'h0'),
      row(1, true, 'a'), row(1, false, 'b'),
      row(2, false, 'c'), // only invalid
      row(3, true, 'a'), row(3, true, 'h0'), // only copies of scored harnesses
      // round 4: the proposer wrote nothing (no rows)
    ];
    assert.equal(unproductiveRoundStreak(rows, 1), 0);
    assert.equal(unproductiveRoundStreak(rows, 2), 1);
    assert.equal(unproductiveRoundStreak(rows, 3), 2);
    assert.equal(unproductiveRoundStreak(rows, 4), 3);
    assert.equal(unproductiveRoundStreak([...rows, row(5, true, 'd')], 5), 0);
    assert.equal(unproductiveRoundStreak(rows, 0), 0);
  });

  test('an invalid candidate does not make its source "seen": a later valid copy of it is new', () => {
    assert.equal(unproductiveRoundStreak([row(0, true, 'h0'), row(1, false, 'x'), row(2, true, 'x')], 2), 0);
  });

  test('a copy within one round: the first one is new, so the round is productive', () => {
    assert.equal(unproductiveRoundStreak([row(0, true, 'h0'), row(1, true, 'x'), row(1, true, 'x')], 1), 0);
  });

  test('exhausted at K rounds in a row, not before', () => {
    assert.equal(proposerExhausted(2, 3).exhausted, false);
    assert.equal(proposerExhausted(3, 3).exhausted, true);
    assert.match(proposerExhausted(3, 3).rule, /^proposer exhausted: 3 proposal rounds in a row scored no new harness/);
  });

  test('inputs no rule can mean are refused with DecisionInputError', () => {
    assert.throws(() => weightStepGate(-1, STEP), DecisionInputError);
    assert.throws(() => weightStepGate(10, 0), DecisionInputError);
    assert.throws(() => harnessPhaseCosts(10, 0, 1), DecisionInputError);
    assert.throws(() => harnessPhaseGate(10, COSTS, 1.5, 0), DecisionInputError);
    assert.throws(() => proposalRoundGate(Number.NaN, 1, 0), DecisionInputError);
    assert.throws(() => proposerExhausted(1, 0), DecisionInputError);
    assert.throws(() => restOfBudget(10, -1), DecisionInputError);
  });
});

void describe('evaluation grid', () => {
  test('the multiples of every that spent reached since the last grid point, in order', () => {
    assert.deepEqual(gridPointsDue(0, 2560, 0), []);
    assert.deepEqual(gridPointsDue(2559, 2560, 0), []);
    assert.deepEqual(gridPointsDue(2560, 2560, 0), [2560]);
    assert.deepEqual(gridPointsDue(7700, 2560, 2560), [5120, 7680]);
    assert.deepEqual(gridPointsDue(7700, 2560, 7680), []);
    assert.throws(() => gridPointsDue(10, 0, 0), DecisionInputError);
  });

  test('property: every grid point is visited exactly once, whatever the spending increments', async () => {
    const fc = (await import('fast-check')).default;
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 30 }), fc.integer({ min: 1, max: 2000 }), (steps, every) => {
      let spent = 0;
      let last = 0;
      const seen: number[] = [];
      for (const d of steps) {
        spent += d;
        const due = gridPointsDue(spent, every, last);
        for (const g of due) assert.ok(g <= spent && g > last && g % every === 0);
        seen.push(...due);
        if (due.length) last = due[due.length - 1];
      }
      assert.deepEqual(seen, Array.from({ length: Math.floor(spent / every) }, (_, i) => (i + 1) * every));
    }));
  });
});
