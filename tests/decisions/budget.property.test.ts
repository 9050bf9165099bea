// Property tests of protocol 'equal': any sequence of units admitted by the gates stays within the budget, a
// weight step always remains after an admitted harness phase, and the exhaustion streak matches its definition.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  harnessPhaseCosts, harnessPhaseGate, proposalRoundGate, unproductiveRoundStreak, weightStepGate, type RoundRow,
} from '../../workflows/decisions';

const sizes = fc.record({
  budget: fc.integer({ min: 0, max: 40_000 }),
  step: fc.integer({ min: 1, max: 2048 }),
  tasks: fc.integer({ min: 1, max: 256 }),
  m: fc.integer({ min: 1, max: 6 }),
  cap: fc.integer({ min: 0, max: 15 }),
  // Per harness phase: the proposal rounds its switching rule would run, and how many candidates score per round.
  rounds: fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 8 }),
  scoredFraction: fc.double({ min: 0, max: 1, noNaN: true }),
  weightStepsPerPhase: fc.integer({ min: 1, max: 8 }),
});

void describe('protocol equal properties', () => {
  test('an alternating run that obeys the gates never exceeds its budget and ends with a weight step', () => {
    fc.assert(fc.property(sizes, (s) => {
      const costs = harnessPhaseCosts(s.tasks, s.m, 1);
      let spent = 0;
      let last: 'weight' | 'harness' | null = null;
      let phase = 0;
      for (;;) {
        // Weight phase: its scheduled steps, then on while the harness phase is unaffordable.
        let steps = 0;
        while (weightStepGate(s.budget - spent, s.step).allowed) {
          spent += s.step;
          steps += 1;
          last = 'weight';
          if (steps >= s.weightStepsPerPhase && harnessPhaseGate(s.budget - spent, costs, s.cap, s.step).allowed) break;
        }
        if (!weightStepGate(s.budget - spent, s.step).allowed) break;
        // Harness phase: round 0, then rounds while the gate admits them (at most the cap).
        spent += costs.round0;
        const want = Math.min(s.cap, s.rounds[phase % Math.max(1, s.rounds.length)] ?? s.cap);
        for (let r = 1; r <= want && proposalRoundGate(s.budget - spent, costs.proposalRound, s.step).allowed; r++) {
          spent += Math.round(costs.proposalRound * s.scoredFraction / s.tasks) * s.tasks; // invalid candidates cost nothing
        }
        last = 'harness';
        assert.ok(weightStepGate(s.budget - spent, s.step).allowed, 'a weight step must remain after an admitted harness phase');
        phase += 1;
      }
      assert.ok(spent <= s.budget, `spent ${spent} > budget ${s.budget}`);
      assert.ok(s.budget - spent < s.step, 'the run ends only when no whole weight step is left');
      if (last !== null) assert.equal(last, 'weight');
    }));
  });

  test('a harness-only run that obeys the round gate never exceeds its budget', () => {
    fc.assert(fc.property(sizes, (s) => {
      const costs = harnessPhaseCosts(s.tasks, s.m, 1);
      let spent = 0;
      if (s.budget < costs.round0) return;
      spent += costs.round0;
      while (proposalRoundGate(s.budget - spent, costs.proposalRound, 0).allowed && costs.proposalRound > 0) spent += costs.proposalRound;
      assert.ok(spent <= s.budget);
      assert.ok(s.budget - spent < costs.proposalRound);
    }));
  });

  test('the streak equals the trailing rounds with no evaluated row whose source was not evaluated before', () => {
    const rows = fc.array(fc.record({ round: fc.integer({ min: 0, max: 12 }), evaluated: fc.boolean(), sourceSha256: fc.constantFrom('a', 'b', 'c', 'd', 'e') }), { maxLength: 40 });
    fc.assert(fc.property(rows, fc.integer({ min: 0, max: 12 }), (rs: RoundRow[], last) => {
      const before = JSON.stringify(rs);
      const streak = unproductiveRoundStreak(rs, last);
      assert.equal(JSON.stringify(rs), before, 'rows are not mutated');
      // Oracle: a round is productive iff one of its evaluated rows has a source no earlier round evaluated
      // and no earlier row of the same round evaluated.
      const productive = (round: number) => {
        const earlier = new Set(rs.filter((r) => r.evaluated && r.round < round).map((r) => r.sourceSha256));
        return rs.some((r) => r.round === round && r.evaluated && !earlier.has(r.sourceSha256));
      };
      let expected = 0;
      for (let r = last; r >= 1 && !productive(r); r--) expected += 1;
      assert.equal(streak, expected);
      assert.ok(streak <= last);
    }));
  });
});
