// Unit tests for the test-evaluation tracker: best and final mean@8.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DecisionInputError, emptyTestTracker, recordTestEval } from '../../workflows/decisions';

void describe('test tracker', () => {
  void test('starts empty with no best and no final', () => {
    assert.deepEqual(emptyTestTracker(), { evaluations: [], best: null, final: null });
  });

  void test('best is the maximum over evaluations, final the latest', () => {
    let tracker = emptyTestTracker();
    tracker = recordTestEval(tracker, { atWeightStep: 1, atRollouts: 2048, meanAt8: 0.3, label: 'weight step 1' });
    tracker = recordTestEval(tracker, { atWeightStep: 2, atRollouts: 4096, meanAt8: 0.5, label: 'weight step 2' });
    tracker = recordTestEval(tracker, { atWeightStep: 2, atRollouts: 4864, meanAt8: 0.4, label: 'end of run' });
    assert.equal(tracker.best, 0.5);
    assert.equal(tracker.final, 0.4);
    assert.deepEqual(tracker.evaluations.map((e) => e.label), ['weight step 1', 'weight step 2', 'end of run']);
  });

  void test('refuses mean@8 outside [0, 1] and bad counts', () => {
    const t = emptyTestTracker();
    assert.throws(() => recordTestEval(t, { atWeightStep: 1, atRollouts: 1, meanAt8: 1.1, label: 'x' }), DecisionInputError);
    assert.throws(() => recordTestEval(t, { atWeightStep: -1, atRollouts: 1, meanAt8: 0.1, label: 'x' }), DecisionInputError);
    assert.throws(() => recordTestEval(t, { atWeightStep: 1, atRollouts: 1, meanAt8: Number.NaN, label: 'x' }), DecisionInputError);
  });
});
