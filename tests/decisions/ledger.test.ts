// Unit tests for the rollout ledger and the run-end budget test.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DecisionInputError, addSearch, addTest, addTraining, budgetRollouts, emptyLedger, harnessScoringRollouts,
  runBudgetReached, weightStepRollouts,
} from '../../workflows/decisions';

void describe('rollout ledger', () => {
  void test('three separate counters; the budget is training + search, never test', () => {
    const ledger = addTest(addSearch(addTraining(emptyLedger(), 2048), 768), 4000);
    assert.deepEqual(ledger, { training: 2048, search: 768, test: 4000 });
    assert.equal(budgetRollouts(ledger), 2816);
  });

  void test('adding zero is allowed; negative or fractional counts throw', () => {
    assert.deepEqual(addTraining(emptyLedger(), 0), emptyLedger());
    assert.throws(() => addTraining(emptyLedger(), -1), DecisionInputError);
    assert.throws(() => addSearch(emptyLedger(), 1.5), DecisionInputError);
    assert.throws(() => addTest(emptyLedger(), Number.NaN), DecisionInputError);
  });

  void test('rollout costs: paper weight step 256 × 8, harness iteration 256 tasks × 3 candidates', () => {
    assert.equal(weightStepRollouts(256, 8), 2048);
    assert.equal(harnessScoringRollouts(256, 3), 768);
    assert.equal(harnessScoringRollouts(256, 1, 2), 512);
  });
});

void describe('runBudgetReached', () => {
  const ledger = addSearch(addTraining(emptyLedger(), 900), 100);
  void test('reached when all weight steps ran', () => {
    assert.equal(runBudgetReached(10, 10, ledger, null), true);
    assert.equal(runBudgetReached(9, 10, ledger, null), false);
  });
  void test('reached when training + search rollouts hit the cap (test rollouts do not count)', () => {
    assert.equal(runBudgetReached(1, 10, ledger, 1000), true);
    assert.equal(runBudgetReached(1, 10, ledger, 1001), false);
    assert.equal(runBudgetReached(1, 10, addTest(ledger, 10_000), 1001), false);
  });
  void test('bad counts throw', () => {
    assert.throws(() => runBudgetReached(-1, 10, ledger, null), DecisionInputError);
    assert.throws(() => runBudgetReached(1, 10, ledger, -5), DecisionInputError);
  });
});
