// Unit tests for the weight-phase patience rule: moving mean, strict best, burn-in, patience, missing signals.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DecisionInputError, initialWeightPatience, observeWeightStep, type WeightPatienceParams } from '../../workflows/decisions';
import { firstSwitchStep, runWeightPhase } from './helpers';

const paper15: WeightPatienceParams = { windowSteps: 15, burnInSteps: 15, patienceSteps: 15 };

void describe('weight patience: when the switch fires', () => {
  void test('B = P = 15 and no improvement after step 1: the earliest switch is at step 16', () => {
    const signals = [0.9, ...Array.from({ length: 30 }, () => 0.1)];
    const { decisions } = runWeightPhase(signals, paper15);
    assert.equal(firstSwitchStep(decisions), 16);
    const d16 = decisions[15];
    assert.equal(d16.stepsSinceBest, 15);
    assert.match(d16.rule, /^switch: 16 steps > burn-in 15 and 15 steps since best \(step 1\) >= patience 15/);
    const d15 = decisions[14];
    assert.equal(d15.shouldSwitch, false);
    assert.match(d15.rule, /^hold: 15 steps <= burn-in 15/);
  });

  void test('a flat signal behaves the same: best at step 1 only, switch at step 16', () => {
    const { decisions } = runWeightPhase(Array.from({ length: 20 }, () => 0.25), paper15);
    assert.deepEqual(decisions.filter((d) => d.newBest).map((d) => d.stepInPhase), [1]);
    assert.equal(firstSwitchStep(decisions), 16);
  });

  void test('past burn-in, patience counts from the last best', () => {
    const params = { windowSteps: 1, burnInSteps: 2, patienceSteps: 3 };
    // Bests at steps 1..5 (rising), then flat: fires when step - 5 >= 3, i.e. at step 8.
    const { decisions } = runWeightPhase([0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.5, 0.5, 0.5], params);
    assert.equal(firstSwitchStep(decisions), 8);
    assert.match(decisions[6].rule, /^hold: 7 steps > burn-in 2 but 2 steps since best \(step 5\) < patience 3/);
  });

  void test('burn-in binds when patience is short: B = 10, P = 1 fires at step 11', () => {
    const { decisions } = runWeightPhase(Array.from({ length: 12 }, () => 0.5), { windowSteps: 3, burnInSteps: 10, patienceSteps: 1 });
    assert.equal(firstSwitchStep(decisions), 11);
  });

  void test('a rising signal never switches', () => {
    const { decisions } = runWeightPhase(Array.from({ length: 40 }, (_, i) => i / 40), { windowSteps: 4, burnInSteps: 2, patienceSteps: 2 });
    assert.equal(firstSwitchStep(decisions), null);
  });
});

void describe('weight patience: missing signals', () => {
  const params = { windowSteps: 2, burnInSteps: 2, patienceSteps: 2 };

  void test('a missing signal never fires, even when the counters say it would', () => {
    // Best at step 1; step 3 would fire (3 > 2 and 2 >= 2), but its signal is missing.
    const { decisions } = runWeightPhase([0.5, 0.1, null, null, 0.1], params);
    assert.equal(decisions[2].shouldSwitch, false);
    assert.equal(decisions[3].shouldSwitch, false);
    assert.equal(decisions[2].stepsSinceBest, 2);
    assert.match(decisions[2].rule, /^hold: step 3 signal missing/);
    assert.equal(decisions[4].shouldSwitch, true, 'the next valid step fires');
    assert.equal(decisions[4].stepsSinceBest, 4);
  });

  void test('a missing signal counts as a step but stays out of the window and the mean', () => {
    const { decisions, state } = runWeightPhase([0.2, null, 0.4], params);
    assert.equal(state.stepsInPhase, 3);
    assert.equal(state.signalsSeen, 2);
    assert.deepEqual(state.window, [0.2, 0.4]);
    assert.equal(decisions[1].movingMean, null);
    assert.equal(decisions[1].signal, null);
    assert.equal(decisions[1].newBest, false);
    assert.equal(decisions[2].movingMean, (0.2 + 0.4) / 2);
  });

  void test('missing signals at the phase start: no best yet, the first valid step is a best', () => {
    const { decisions, state } = runWeightPhase([null, null, 0], params);
    assert.equal(decisions[1].best, null);
    assert.match(decisions[1].rule, /since phase start \(no best yet\)/);
    assert.equal(decisions[2].newBest, true);
    assert.equal(state.lastBestStep, 3);
    assert.equal(state.best, 0);
  });

  void test('an all-missing phase never switches', () => {
    const { decisions } = runWeightPhase(Array.from({ length: 50 }, () => null), params);
    assert.equal(firstSwitchStep(decisions), null);
  });

  void test('a step where nothing was accepted is a valid signal of 0', () => {
    const { decisions } = runWeightPhase([0], params);
    assert.equal(decisions[0].newBest, true);
    assert.equal(decisions[0].movingMean, 0);
  });
});

void describe('weight patience: moving mean and strict best', () => {
  void test('prefix mean until W values exist, then the mean of the last W', () => {
    const { decisions, state } = runWeightPhase([0.2, 0.4, 0.6, 0.8], { windowSteps: 3, burnInSteps: 100, patienceSteps: 100 });
    const means = decisions.map((d) => d.movingMean);
    assert.equal(means[0], 0.2);
    assert.ok(Math.abs((means[1] as number) - 0.3) < 1e-15);
    assert.ok(Math.abs((means[2] as number) - 0.4) < 1e-15);
    assert.ok(Math.abs((means[3] as number) - 0.6) < 1e-15);
    assert.deepEqual(state.window, [0.4, 0.6, 0.8]);
  });

  void test('an equal moving mean is not a new best', () => {
    const { decisions } = runWeightPhase([0.5, 0.5, 0.5], { windowSteps: 1, burnInSteps: 10, patienceSteps: 10 });
    assert.deepEqual(decisions.map((d) => d.newBest), [true, false, false]);
    assert.deepEqual(decisions.map((d) => d.stepsSinceBest), [0, 1, 2]);
  });

  void test('rounding noise is not an improvement: 0.1 three times (0.1+0.1+0.1 / 3 = 0.10000000000000002 in doubles)', () => {
    assert.ok((0.1 + 0.1 + 0.1) / 3 > 0.1, 'precondition: doubles do produce the noise');
    const { decisions } = runWeightPhase([0.1, 0.1, 0.1], { windowSteps: 3, burnInSteps: 10, patienceSteps: 10 });
    assert.deepEqual(decisions.map((d) => d.newBest), [true, false, false]);
  });

  void test('the smallest real improvement counts: one more accepted rollout of 2,048 in a 16-step window', () => {
    const base = 1000 / 2048;
    const signals = [...Array.from({ length: 16 }, () => base), 1001 / 2048];
    const { decisions } = runWeightPhase(signals, { windowSteps: 16, burnInSteps: 100, patienceSteps: 100 });
    assert.equal(decisions[16].newBest, true);
  });

  void test('a lower moving mean is not a best and the best holds', () => {
    const { decisions } = runWeightPhase([0.6, 0.2], { windowSteps: 1, burnInSteps: 10, patienceSteps: 10 });
    assert.equal(decisions[1].newBest, false);
    assert.equal(decisions[1].best, 0.6);
  });
});

void describe('weight patience: state per phase', () => {
  void test('the initial state is reset and fresh on every call', () => {
    const a = initialWeightPatience();
    const b = initialWeightPatience();
    assert.deepEqual(a, { window: [], best: null, stepsInPhase: 0, lastBestStep: 0, signalsSeen: 0 });
    assert.notEqual(a.window, b.window);
  });

  void test('a new phase starts over: step numbering, best and window reset', () => {
    const params = { windowSteps: 2, burnInSteps: 1, patienceSteps: 1 };
    const phase1 = runWeightPhase([0.9, 0.9, 0.9], params);
    assert.equal(phase1.state.best, 0.9);
    const phase2 = runWeightPhase([0.1], params);
    assert.equal(phase2.decisions[0].stepInPhase, 1);
    assert.equal(phase2.decisions[0].newBest, true, 'a lower value is a best in a fresh phase');
    assert.deepEqual(phase2.state.window, [0.1]);
  });

  void test('the window holds at most W values, also when W shrinks mid-phase', () => {
    let { state } = runWeightPhase([0.1, 0.2, 0.3, 0.4], { windowSteps: 4, burnInSteps: 9, patienceSteps: 9 });
    ({ state } = observeWeightStep(state, 0.5, { windowSteps: 2, burnInSteps: 9, patienceSteps: 9 }));
    assert.deepEqual(state.window, [0.4, 0.5]);
  });
});

void describe('weight patience: input errors', () => {
  void test('NaN or infinite signals are refused', () => {
    assert.throws(() => observeWeightStep(initialWeightPatience(), Number.NaN, paper15), DecisionInputError);
    assert.throws(() => observeWeightStep(initialWeightPatience(), Number.POSITIVE_INFINITY, paper15), DecisionInputError);
  });
  void test('W < 1, negative or fractional B/P are refused', () => {
    assert.throws(() => observeWeightStep(initialWeightPatience(), 0.5, { ...paper15, windowSteps: 0 }), DecisionInputError);
    assert.throws(() => observeWeightStep(initialWeightPatience(), 0.5, { ...paper15, burnInSteps: -1 }), DecisionInputError);
    assert.throws(() => observeWeightStep(initialWeightPatience(), 0.5, { ...paper15, patienceSteps: 1.5 }), DecisionInputError);
  });
});
