// Property tests for both patience rules: the switch/stop conditions hold on every step, the state matches
// a from-history oracle, inputs are never mutated and every state survives a JSON round trip.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  initialHarnessPatience, initialWeightPatience, isStrictlyAbove, observeHarnessRound, observeWeightStep,
  type HarnessPatienceParams, type WeightPatienceParams,
} from '../../workflows/decisions';
import { deepFreeze, firstSwitchStep, jsonRoundTrip, runHarnessPhase, runWeightPhase } from './helpers';

const weightParams: fc.Arbitrary<WeightPatienceParams> = fc.record({
  windowSteps: fc.integer({ min: 1, max: 20 }),
  burnInSteps: fc.integer({ min: 0, max: 30 }),
  patienceSteps: fc.integer({ min: 0, max: 30 }),
});
// Mean rewards of binary rollouts, on a coarse grid so ties and plateaus actually happen; null = missing.
const rate = fc.integer({ min: 0, max: 64 }).map((k) => k / 64);
const signals = fc.array(fc.option(rate, { freq: 5, nil: null }), { maxLength: 80 });

void describe('weight patience properties', () => {
  void test('the switch never fires at stepInPhase <= B, on a missing signal, or before P steps since best', () => {
    fc.assert(fc.property(signals, weightParams, (s, params) => {
      for (const d of runWeightPhase(s, params).decisions) {
        if (!d.shouldSwitch) continue;
        assert.ok(d.stepInPhase > params.burnInSteps);
        assert.notEqual(d.signal, null);
        assert.ok(d.stepsSinceBest >= params.patienceSteps);
      }
    }));
  });

  void test('every valid step past burn-in with P steps since best does fire (the rule is iff)', () => {
    fc.assert(fc.property(signals, weightParams, (s, params) => {
      for (const d of runWeightPhase(s, params).decisions) {
        const expected = d.signal !== null && d.stepInPhase > params.burnInSteps && d.stepsSinceBest >= params.patienceSteps;
        assert.equal(d.shouldSwitch, expected);
      }
    }));
  });

  void test('decisions match an oracle computed from the whole history', () => {
    fc.assert(fc.property(signals, weightParams, (s, params) => {
      const { decisions, state } = runWeightPhase(s, params);
      let best: number | null = null;
      let lastBestStep = 0;
      const seen: number[] = [];
      s.forEach((signal, i) => {
        const step = i + 1;
        const d = decisions[i];
        assert.equal(d.stepInPhase, step);
        if (signal === null) {
          assert.equal(d.newBest, false);
          assert.equal(d.movingMean, null);
        } else {
          seen.push(signal);
          const window = seen.slice(-params.windowSteps);
          const mean = window.reduce((a, b) => a + b, 0) / window.length;
          assert.equal(d.movingMean, mean);
          const isBest = isStrictlyAbove(mean, best);
          assert.equal(d.newBest, isBest);
          if (isBest) { best = mean; lastBestStep = step; }
        }
        assert.equal(d.best, best);
        assert.equal(d.stepsSinceBest, step - lastBestStep);
      });
      assert.equal(state.stepsInPhase, s.length);
      assert.equal(state.signalsSeen, seen.length);
      assert.deepEqual(state.window, seen.slice(-params.windowSteps));
    }));
  });

  void test('a signal that never improves after step 1 switches first at max(B + 1, P + 1)', () => {
    fc.assert(fc.property(rate, fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 20 }),
      (level, burnInSteps, patienceSteps, windowSteps) => {
        const flat = Array.from({ length: 90 }, () => level);
        const { decisions } = runWeightPhase(flat, { windowSteps, burnInSteps, patienceSteps });
        assert.deepEqual(decisions.filter((d) => d.newBest).map((d) => d.stepInPhase), [1]);
        assert.equal(firstSwitchStep(decisions), Math.max(burnInSteps + 1, patienceSteps + 1));
      }));
  });

  void test('a constant arbitrary double never registers a second best (rounding noise is no improvement)', () => {
    fc.assert(fc.property(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 1, max: 50 }), (level, windowSteps) => {
      const { decisions } = runWeightPhase(Array.from({ length: 60 }, () => level), { windowSteps, burnInSteps: 100, patienceSteps: 100 });
      assert.equal(decisions.filter((d) => d.newBest).length, 1);
    }));
  });

  void test('never mutates its input state; every state JSON round-trips', () => {
    fc.assert(fc.property(signals, weightParams, (s, params) => {
      let state = initialWeightPatience();
      for (const signal of s) {
        const before = structuredClone(state);
        const frozenParams = deepFreeze({ ...params });
        const out = observeWeightStep(deepFreeze(state), signal, frozenParams);
        assert.deepEqual(state, before);
        assert.deepEqual(jsonRoundTrip(out.state), out.state);
        assert.deepEqual(jsonRoundTrip(out.decision), out.decision);
        state = out.state;
      }
    }));
  });
});

const harnessParams: fc.Arbitrary<HarnessPatienceParams> = fc.record({
  minProposalRounds: fc.integer({ min: 0, max: 10 }),
  patienceRounds: fc.integer({ min: 0, max: 5 }),
  maxProposalRounds: fc.integer({ min: 0, max: 20 }),
  stopAtScore: fc.option(rate, { nil: null }),
});
// The archive only grows, so its maximum is non-decreasing: a running max of arbitrary rates.
const archiveBests = fc.array(rate, { minLength: 1, maxLength: 25 }).map((xs) => xs.map((_, i) => Math.max(...xs.slice(0, i + 1))));

void describe('harness patience properties', () => {
  void test('round 1 is always a best; stop iff score, cap, or min rounds + patience', () => {
    fc.assert(fc.property(archiveBests, harnessParams, (values, params) => {
      const decisions = runHarnessPhase(values, params);
      assert.equal(decisions[0].newBest, true);
      decisions.forEach((d, i) => {
        assert.equal(d.proposalRound, i + 1);
        assert.equal(d.bestSuccess, values[i]);
        assert.equal(d.newBest, i === 0 || values[i] > values[i - 1]);
        const reachedScore = params.stopAtScore !== null && d.bestSuccess >= params.stopAtScore;
        const expected = reachedScore || d.proposalRound >= params.maxProposalRounds
          || (d.proposalRound >= params.minProposalRounds && d.roundsSinceBest >= params.patienceRounds);
        assert.equal(d.shouldStop, expected);
      });
    }));
  });

  void test('roundsSinceBest counts rounds since the last strict increase', () => {
    fc.assert(fc.property(archiveBests, harnessParams, (values, params) => {
      let lastBestRound = 1;
      runHarnessPhase(values, params).forEach((d, i) => {
        if (i > 0 && values[i] > values[i - 1]) lastBestRound = i + 1;
        assert.equal(d.roundsSinceBest, d.proposalRound - lastBestRound);
      });
    }));
  });

  void test('never mutates its input state; every state JSON round-trips', () => {
    fc.assert(fc.property(archiveBests, harnessParams, (values, params) => {
      let state = initialHarnessPatience();
      for (const value of values) {
        const before = structuredClone(state);
        const out = observeHarnessRound(deepFreeze(state), value, deepFreeze({ ...params }));
        assert.deepEqual(state, before);
        assert.deepEqual(jsonRoundTrip(out.state), out.state);
        assert.deepEqual(jsonRoundTrip(out.decision), out.decision);
        state = out.state;
      }
    }));
  });
});
