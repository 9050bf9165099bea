// Unit tests for a proposal round that scored no candidate: counted (min rounds, rounds since best, cap) but
// never judged, as in the reference release; only the hard cap can stop the phase on such a round.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_HARNESS_PATIENCE, DecisionInputError, initialHarnessPatience, observeHarnessRound, skipHarnessRound,
  type HarnessPatienceParams, type HarnessPatienceState,
} from '../../workflows/decisions';

const defaults: HarnessPatienceParams = { ...DEFAULT_HARNESS_PATIENCE };

/** Runs rounds given as archive-best values, or 'skip' for a round that scored nothing; returns the stop round. */
function stopRound(rounds: Array<number | 'skip'>, params: HarnessPatienceParams = defaults): number | null {
  let state: HarnessPatienceState = initialHarnessPatience();
  for (const r of rounds) {
    const o = r === 'skip' ? skipHarnessRound(state, state.best ?? 0, params) : observeHarnessRound(state, r, params);
    state = o.state;
    if (o.decision.shouldStop) return o.decision.proposalRound;
  }
  return null;
}

void describe('harness patience: rounds that scored nothing', () => {
  void test('a skipped round never stops the phase by patience, even where an observed one would', () => {
    // Observed, round 5 stops (5 >= min, 4 rounds without a best); skipped, it does not.
    assert.equal(stopRound([0.5, 0.5, 0.5, 0.5, 0.5]), 5);
    assert.equal(stopRound([0.5, 0.5, 0.5, 0.5, 'skip']), null);
    // The skipped round still counted: the next judged round stops at once.
    assert.equal(stopRound([0.5, 0.5, 0.5, 0.5, 'skip', 0.5]), 6);
  });

  void test('a skipped round counts toward min rounds, rounds since best and the cap, and registers no best', () => {
    const one = skipHarnessRound(initialHarnessPatience(), 0.4, defaults);
    assert.deepEqual(one.state, { proposalRounds: 1, best: null, roundsSinceBest: 0 });
    assert.equal(one.decision.newBest, false);
    assert.equal(one.decision.shouldStop, false);
    assert.match(one.decision.rule, /^continue: proposal round 1 scored no candidate, patience not checked; no phase best yet/);
    // The first judged round after it sets the best (best was still minus infinity).
    const two = observeHarnessRound(one.state, 0.4, defaults);
    assert.equal(two.decision.newBest, true);
    assert.equal(two.decision.proposalRound, 2);
    const withBest = skipHarnessRound(two.state, 0.4, defaults);
    assert.deepEqual(withBest.state, { proposalRounds: 3, best: 0.4, roundsSinceBest: 1 });
  });

  void test('the hard cap stops the phase on a skipped round; a proposer that always fails ends at the cap', () => {
    assert.equal(stopRound(Array.from({ length: 20 }, () => 'skip' as const)), 15);
    const capped = skipHarnessRound({ proposalRounds: 3, best: 0.2, roundsSinceBest: 0 }, 0.2, { ...defaults, maxProposalRounds: 4 });
    assert.equal(capped.decision.shouldStop, true);
    assert.match(capped.decision.rule, /^stop: .*4 proposal rounds >= hard cap 4/);
  });

  void test('bad input is refused', () => {
    assert.throws(() => skipHarnessRound(initialHarnessPatience(), Number.NaN, defaults), DecisionInputError);
    assert.throws(() => skipHarnessRound(initialHarnessPatience(), 0.5, { ...defaults, maxProposalRounds: -1 }), DecisionInputError);
  });
});
