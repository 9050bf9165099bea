// Unit tests for the harness-phase stop rule: round-1 best, min rounds + patience, hard cap, stop-at-score.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_HARNESS_PATIENCE, DecisionInputError, harnessStopsAfterRound0, initialHarnessPatience, observeHarnessRound,
  type HarnessPatienceParams,
} from '../../workflows/decisions';
import { runHarnessPhase } from './helpers';

const defaults: HarnessPatienceParams = { ...DEFAULT_HARNESS_PATIENCE };
const firstStop = (values: number[], params: HarnessPatienceParams = defaults): number | null => {
  const hit = runHarnessPhase(values, params).find((d) => d.shouldStop);
  return hit === undefined ? null : hit.proposalRound;
};

void describe('harness patience', () => {
  void test('defaults are min 5, patience 2, cap 15, no stop-at-score, and frozen', () => {
    assert.deepEqual(defaults, { minProposalRounds: 5, patienceRounds: 2, maxProposalRounds: 15, stopAtScore: null });
    assert.ok(Object.isFrozen(DEFAULT_HARNESS_PATIENCE));
  });

  void test('proposal round 1 always registers a best, even at success 0', () => {
    const [d1] = runHarnessPhase([0], defaults);
    assert.equal(d1.proposalRound, 1);
    assert.equal(d1.newBest, true);
    assert.equal(d1.roundsSinceBest, 0);
    assert.equal(d1.bestSuccess, 0);
  });

  void test('no improvement after round 1: stops at min rounds (5), where 4 >= 2 rounds passed without a best', () => {
    const decisions = runHarnessPhase(Array.from({ length: 10 }, () => 0.5), defaults);
    assert.deepEqual(decisions.map((d) => d.shouldStop).slice(0, 5), [false, false, false, false, true]);
    assert.match(decisions[4].rule, /^stop: 5 proposal rounds >= min 5 and 4 rounds without a new best >= patience 2/);
    assert.match(decisions[2].rule, /^continue: 3 proposal rounds < min 5/);
  });

  void test('improving through round 5, then flat: stops at round 7 (2 rounds without a best)', () => {
    const values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.5, 0.5];
    assert.equal(firstStop(values), 7);
    const decisions = runHarnessPhase(values, defaults);
    assert.equal(decisions[5].shouldStop, false);
    assert.match(decisions[5].rule, /^continue: 1 rounds without a new best < patience 2/);
  });

  void test('improvement must be strict: an equal archive best does not reset patience', () => {
    const decisions = runHarnessPhase([0.5, 0.5, 0.5], defaults);
    assert.deepEqual(decisions.map((d) => d.newBest), [true, false, false]);
    assert.deepEqual(decisions.map((d) => d.roundsSinceBest), [0, 1, 2]);
  });

  void test('a new best resets the count', () => {
    const decisions = runHarnessPhase([0.1, 0.1, 0.2], defaults);
    assert.equal(decisions[2].newBest, true);
    assert.equal(decisions[2].roundsSinceBest, 0);
  });

  void test('hard cap: an ever-improving archive stops at round 15', () => {
    const values = Array.from({ length: 20 }, (_, i) => (i + 1) / 20);
    assert.equal(firstStop(values), 15);
    assert.match(runHarnessPhase(values, defaults)[14].rule, /15 proposal rounds >= hard cap 15/);
  });

  void test('stop-at-score stops at once, before min rounds', () => {
    const params = { ...defaults, stopAtScore: 1 };
    assert.equal(firstStop([0.5, 1, 1], params), 2);
    assert.match(runHarnessPhase([0.5, 1], params)[1].rule, /^stop: best 1 >= stop-at-score 1/);
    assert.equal(firstStop([0.5, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99], params), 5, 'below the score, patience still applies');
  });

  void test('stop-at-score disabled (null): a perfect score still waits for min rounds', () => {
    assert.equal(firstStop([1, 1, 1, 1, 1, 1]), 5);
  });

  void test('a lower archive value cannot lower the phase best', () => {
    const decisions = runHarnessPhase([0.6, 0.4], defaults);
    assert.equal(decisions[1].bestSuccess, 0.6);
    assert.equal(decisions[1].newBest, false);
  });

  void test('the initial state is fresh per phase', () => {
    assert.deepEqual(initialHarnessPatience(), { proposalRounds: 0, best: null, roundsSinceBest: 0 });
  });

  void test('round 0 check: skip proposals when the cap is 0 or h0 already reaches the score', () => {
    assert.equal(harnessStopsAfterRound0(0.3, { ...defaults, maxProposalRounds: 0 }).shouldStop, true);
    assert.equal(harnessStopsAfterRound0(1, { ...defaults, stopAtScore: 1 }).shouldStop, true);
    assert.equal(harnessStopsAfterRound0(0.9, { ...defaults, stopAtScore: 1 }).shouldStop, false);
    assert.equal(harnessStopsAfterRound0(1, defaults).shouldStop, false);
  });

  void test('input errors: a success rate outside [0, 1], bad params', () => {
    assert.throws(() => observeHarnessRound(initialHarnessPatience(), 1.5, defaults), DecisionInputError);
    assert.throws(() => observeHarnessRound(initialHarnessPatience(), Number.NaN, defaults), DecisionInputError);
    assert.throws(() => observeHarnessRound(initialHarnessPatience(), 0.5, { ...defaults, patienceRounds: -1 }), DecisionInputError);
    assert.throws(() => observeHarnessRound(initialHarnessPatience(), 0.5, { ...defaults, stopAtScore: 2 }), DecisionInputError);
  });
});
