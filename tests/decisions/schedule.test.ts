// Unit tests for the fixed-schedule arithmetic: epochs to steps, steps per epoch, proposal rounds, test cadence.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DecisionInputError, TEST_EVAL_EVERY_EPOCHS, epochsToSteps, fixedProposalRounds, stepsPerEpoch, testEvalDue } from '../../workflows/decisions';

void describe('epochsToSteps (round half up via Math.round, at least 1)', () => {
  void test('0.2 epoch of 10 steps is 2 steps', () => assert.equal(epochsToSteps(0.2, 10), 2));
  void test('0.04 epoch of 10 steps is 1 step (0.4 rounds to 0, the minimum is 1)', () => assert.equal(epochsToSteps(0.04, 10), 1));
  void test('0.25 epoch of 10 steps is 3 steps (2.5 rounds half up)', () => assert.equal(epochsToSteps(0.25, 10), 3));
  void test('0.6 epoch of 10 steps is 6 steps; 0.1 of 10 is 1', () => {
    assert.equal(epochsToSteps(0.6, 10), 6);
    assert.equal(epochsToSteps(0.1, 10), 1);
  });
  void test('0 epochs still gives 1 step', () => assert.equal(epochsToSteps(0, 10), 1));
  void test('float noise does not move a true half: 0.29 × 50 (14.499999999999998 in doubles) → 15, 0.35 × 10 → 4', () => {
    assert.ok(0.29 * 50 < 14.5, 'precondition: doubles do produce the noise');
    assert.equal(epochsToSteps(0.29, 50), 15);
    assert.equal(epochsToSteps(1.005, 1000), 1005);
    assert.equal(epochsToSteps(0.35, 10), 4);
  });
  void test('just under a half rounds down: 0.249 × 10 = 2.49 → 2', () => assert.equal(epochsToSteps(0.249, 10), 2));
  void test('the paper scale: 0.2 epoch of 79 steps is 16 (15.8)', () => assert.equal(epochsToSteps(0.2, 79), 16));
  void test('rejects negative or non-finite epochs and non-integer steps per epoch', () => {
    assert.throws(() => epochsToSteps(-0.1, 10), DecisionInputError);
    assert.throws(() => epochsToSteps(Number.NaN, 10), DecisionInputError);
    assert.throws(() => epochsToSteps(Number.POSITIVE_INFINITY, 10), DecisionInputError);
    assert.throws(() => epochsToSteps(0.2, 0), DecisionInputError);
    assert.throws(() => epochsToSteps(0.2, 2.5), DecisionInputError);
  });
});

void describe('stepsPerEpoch (ceil, at least 1)', () => {
  void test('exact division', () => assert.equal(stepsPerEpoch(2560, 256), 10));
  void test('a partial last batch costs a step', () => assert.equal(stepsPerEpoch(2561, 256), 11));
  void test('fewer prompts than a batch is 1 step; an empty set is still 1', () => {
    assert.equal(stepsPerEpoch(100, 256), 1);
    assert.equal(stepsPerEpoch(0, 256), 1);
  });
  void test('rejects a zero batch or fractional sizes', () => {
    assert.throws(() => stepsPerEpoch(100, 0), DecisionInputError);
    assert.throws(() => stepsPerEpoch(10.5, 2), DecisionInputError);
    assert.throws(() => stepsPerEpoch(-1, 2), DecisionInputError);
  });
});

void describe('fixedProposalRounds (I counts round 0)', () => {
  void test('I = 6 is 5 proposal rounds', () => assert.equal(fixedProposalRounds(6), 5));
  void test('I = 1 is round 0 only', () => assert.equal(fixedProposalRounds(1), 0));
  void test('I < 1 or fractional is an input error', () => {
    assert.throws(() => fixedProposalRounds(0), DecisionInputError);
    assert.throws(() => fixedProposalRounds(2.5), DecisionInputError);
  });
});

void describe('testEvalDue', () => {
  void test('never at step 0', () => assert.equal(testEvalDue(0, 3), false));
  void test('due on multiples of the cadence only', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((s) => testEvalDue(s, 3)), [false, false, true, false, false, true, false]);
  });
  void test('a cadence of 1 is due after every step', () => assert.equal(testEvalDue(1, 1), true));
  void test('the 0.1-epoch cadence of a 10-step epoch is every step; of 79 steps every 8', () => {
    assert.equal(epochsToSteps(TEST_EVAL_EVERY_EPOCHS, 10), 1);
    assert.equal(epochsToSteps(TEST_EVAL_EVERY_EPOCHS, 79), 8);
  });
  void test('rejects a zero cadence', () => assert.throws(() => testEvalDue(3, 0), DecisionInputError));
});
