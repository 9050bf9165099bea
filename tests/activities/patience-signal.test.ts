// The weight-patience signal of a rollout batch: the mean reward over every rollout, harness failures
// counting 0 (as the paper averages), and no signal only when every rollout was a harness failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { patienceSignal } from '../../activities/model-activities';

const t = (stopReason: 'answer' | 'turn-limit' | 'harness-failure' | 'contract-violation', reward: 0 | 1) => ({ stopReason, reward });

test('harness failures count as reward 0 in the mean, not as absent rollouts', () => {
  const batch = [t('answer', 1), t('answer', 1), t('turn-limit', 0), t('harness-failure', 0)];
  assert.deepEqual(patienceSignal(batch), { scored: 3, meanReward: 2 / 4 });
  // A contract violation is scored (reward 0) like any other verdict.
  assert.deepEqual(patienceSignal([t('contract-violation', 0), t('answer', 1)]), { scored: 2, meanReward: 1 / 2 });
});

test('a batch where every rollout was a harness failure has no signal; one where nothing was accepted has signal 0', () => {
  assert.deepEqual(patienceSignal([t('harness-failure', 0), t('harness-failure', 0)]), { scored: 0, meanReward: null });
  assert.deepEqual(patienceSignal([t('turn-limit', 0), t('answer', 0)]), { scored: 2, meanReward: 0 });
  assert.deepEqual(patienceSignal([]), { scored: 0, meanReward: null });
});
