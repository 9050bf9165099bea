// followResult: a comparison run's result is followed again after a lost connection (the run goes on on the
// server), but a run's own end (failed, terminated, gone) and a server silent too long end the wait. The
// handle is a scripted double that fails loudly when called more often than scripted; time is simulated.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { followResult, type FollowOptions } from '../../bench/follow-result';

type Step = { error: string; name?: string; takesMs?: number } | { value: string; takesMs?: number };

function scripted(steps: Step[], clock: { t: number }) {
  let calls = 0;
  return {
    get calls() { return calls; },
    async result(): Promise<string> {
      const step = steps[calls++];
      if (!step) throw new Error(`result() called ${calls} times, more than the ${steps.length} scripted`);
      clock.t += step.takesMs ?? 0;
      if ('value' in step) return step.value;
      const e = new Error(step.error);
      if (step.name) e.name = step.name;
      throw e;
    },
  };
}

function options(clock: { t: number }, giveUpMs = 60_000): FollowOptions & { slept: number[] } {
  const slept: number[] = [];
  return { retryMs: 5_000, giveUpMs, slept, now: () => clock.t, sleep: async (ms) => { slept.push(ms); clock.t += ms; } };
}

describe('followResult', () => {
  it('follows again after connection errors and returns the result', async () => {
    const clock = { t: 0 };
    const h = scripted([{ error: 'Failed to get Workflow execution history', takesMs: 1_000 }, { error: '14 UNAVAILABLE: No connection established' }, { value: 'done', takesMs: 30_000 }], clock);
    const lines: string[] = [];
    const o = options(clock);
    assert.equal(await followResult(h, 'bench-x', (l) => lines.push(l), o), 'done');
    assert.equal(h.calls, 3);
    assert.deepEqual(o.slept, [5_000, 5_000]);
    assert.match(lines[0], /^follow bench-x: Failed to get Workflow execution history; following it again in 5 s/);
    assert.match(lines[1], /14 UNAVAILABLE/);
  });

  it("a run's own end is not retried", async () => {
    for (const name of ['WorkflowFailedError', 'WorkflowNotFoundError']) {
      const clock = { t: 0 };
      const h = scripted([{ error: 'Workflow execution terminated', name }], clock);
      await assert.rejects(followResult(h, 'bench-x', () => assert.fail('nothing to log'), options(clock)), (e: Error) => e.name === name);
      assert.equal(h.calls, 1);
    }
  });

  it('gives up when the server stays silent for giveUpMs, saying the run goes on and how to follow it', async () => {
    const clock = { t: 0 };
    const steps: Step[] = Array.from({ length: 13 }, () => ({ error: '14 UNAVAILABLE', takesMs: 100 }));
    const h = scripted(steps, clock);
    const o = options(clock, 60_000);
    await assert.rejects(followResult(h, 'bench-x', () => undefined, o), /lost the Temporal server while following bench-x \(14 UNAVAILABLE; no answer for 1 min\)\. The run goes on there: run the same command again to follow it/);
    assert.ok(h.calls >= 12 && h.calls <= 13, `calls ${h.calls}`);
  });

  it('a long wait before an error counts as contact: the silence is measured from the last long poll', async () => {
    const clock = { t: 0 };
    // Two quick failures, then a 20-min long poll that ends in an error, then quick failures again: without the
    // reset the 30 min of the run would count as silence.
    const steps: Step[] = [{ error: 'UNAVAILABLE' }, { error: 'UNAVAILABLE' }, { error: 'DEADLINE_EXCEEDED', takesMs: 20 * 60_000 }, { error: 'UNAVAILABLE' }, { value: 'done' }];
    const h = scripted(steps, clock);
    assert.equal(await followResult(h, 'bench-x', () => undefined, options(clock, 10 * 60_000)), 'done');
    assert.equal(h.calls, 5);
  });
});
