// The error model's one mapper (common/failure.ts) and the activity boundary built on it: each fault's retry
// decision, the failure type (the class name), message, stack, fault detail and cause chain; failures made on
// purpose and cancellations pass unchanged.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure, CancelledFailure, TemporalFailure } from '@temporalio/common';
import { ConfigError, FAULTS, WhaleError, faultOf, isRetryableFault, isWhaleError, type Fault } from '../../common/errors';
import { toApplicationFailure } from '../../common/failure';
import { atActivityBoundary, cancellationSignal, configError } from '../../activities/activity-context';
import { DecisionInputError } from '../../workflows/decisions';
import { AgentConfigError, AgentSystemError } from '../../agent/errors';
import { ArtifactIntegrityError } from '../../store/artifact-store';

function errorOf(fault: Fault): WhaleError {
  class FaultyThing extends WhaleError {
    override readonly name = 'FaultyThing';
    readonly fault = fault;
  }
  return new FaultyThing(`a ${fault} fault`);
}

function asApplicationFailure(f: TemporalFailure): ApplicationFailure {
  assert.ok(f instanceof ApplicationFailure, `an ApplicationFailure, got ${f.constructor.name}`);
  return f;
}

describe('toApplicationFailure', () => {
  it('retries system faults only, and records the fault in the details', () => {
    const expected: Record<Fault, boolean> = { 'user-input': false, 'untrusted-code': false, 'model-behaviour': false, system: true, bug: false };
    assert.deepEqual([...FAULTS].sort(), Object.keys(expected).sort(), 'every fault has an expectation');
    for (const fault of FAULTS) {
      const f = asApplicationFailure(toApplicationFailure(errorOf(fault)));
      assert.equal(f.nonRetryable, !expected[fault], fault);
      assert.equal(isRetryableFault(fault), expected[fault], fault);
      assert.deepEqual(f.details, [{ fault }], fault);
    }
  });

  it('keeps the class name as the type, the message and the stack', () => {
    const err = new ArtifactIntegrityError('artifact cas://sha256/ab (checkpoint) is corrupt: restore it');
    const f = asApplicationFailure(toApplicationFailure(err));
    assert.equal(f.type, 'ArtifactIntegrityError');
    assert.equal(f.message, err.message);
    assert.equal(f.stack, err.stack);
    assert.equal(f.nonRetryable, false);

    const bug = asApplicationFailure(toApplicationFailure(new DecisionInputError('successRate of c1 must lie in [0, 1], got 1.5')));
    assert.deepEqual([bug.type, bug.nonRetryable, bug.message], ['DecisionInputError', true, 'successRate of c1 must lie in [0, 1], got 1.5']);
    const config = asApplicationFailure(toApplicationFailure(new AgentConfigError('invalid rollout settings: topP 2')));
    assert.deepEqual([config.type, config.nonRetryable], ['AgentConfigError', true]);
  });

  it('maps the cause chain link by link, each with its own type and fault', () => {
    const root = new AgentConfigError('samplesPerTask must be >= 1');
    const middle = new Error('loading the sampler failed', { cause: root });
    const top = new AgentSystemError('rollout batch failed', { cause: middle });
    const f = asApplicationFailure(toApplicationFailure(top));
    assert.deepEqual([f.type, f.nonRetryable, f.message], ['AgentSystemError', false, 'rollout batch failed']);
    const c1 = asApplicationFailure(f.cause as TemporalFailure);
    assert.deepEqual([c1.type, c1.nonRetryable, c1.message, c1.details], ['Error', false, 'loading the sampler failed', [{ fault: 'system' }]]);
    const c2 = asApplicationFailure(c1.cause as TemporalFailure);
    assert.deepEqual([c2.type, c2.nonRetryable, c2.message, c2.details], ['AgentConfigError', true, 'samplesPerTask must be >= 1', [{ fault: 'user-input' }]]);
    assert.equal(c2.cause, undefined);
  });

  it('ends a cyclic cause chain', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    let f: TemporalFailure | undefined = toApplicationFailure(a);
    let depth = 0;
    while (f) {
      depth++;
      f = f.cause as TemporalFailure | undefined;
    }
    assert.ok(depth > 1 && depth < 20, `depth ${depth}`);
  });

  it('passes failures made on purpose and cancellations unchanged', () => {
    const own = ApplicationFailure.nonRetryable('harness abc does not load: compile-error', 'InvalidHarness');
    assert.equal(toApplicationFailure(own), own);
    const retryableOwn = ApplicationFailure.retryable('try again', 'Flaky');
    assert.equal(toApplicationFailure(retryableOwn), retryableOwn);
    const cancelled = new CancelledFailure('CANCELLED');
    assert.equal(toApplicationFailure(cancelled), cancelled);
  });

  it('treats errors that are not WhaleErrors as system faults, as Temporal does by default', () => {
    const f = asApplicationFailure(toApplicationFailure(new TypeError("cannot read properties of undefined (reading 'x')")));
    assert.deepEqual([f.type, f.nonRetryable, f.details], ['TypeError', false, [{ fault: 'system' }]]);
    const s = asApplicationFailure(toApplicationFailure('a thrown string'));
    assert.deepEqual([s.type, s.message, s.nonRetryable], ['string', 'a thrown string', false]);
    assert.equal(faultOf(new Error('x')), 'system');
  });

  it('recognises a WhaleError from another copy of the module by its fault', () => {
    const foreign = Object.assign(new Error('from a bundle'), { name: 'ConfigError', fault: 'user-input' });
    assert.equal(isWhaleError(foreign), true);
    assert.deepEqual([asApplicationFailure(toApplicationFailure(foreign)).type, asApplicationFailure(toApplicationFailure(foreign)).nonRetryable], ['ConfigError', true]);
    assert.equal(isWhaleError(Object.assign(new Error('x'), { fault: 'nobody' })), false);
  });
});

describe('the activity boundary', () => {
  const acts = atActivityBoundary({
    async ok(x: number) {
      return x + 1;
    },
    async badConfig() {
      return configError('unknown domain "poetry"; known domains: math');
    },
    async corrupt() {
      throw new ArtifactIntegrityError('artifact is corrupt');
    },
    async plain() {
      throw new RangeError('out of range');
    },
    async purpose() {
      throw ApplicationFailure.nonRetryable('harness does not load', 'InvalidHarness');
    },
    async waitForCancel() {
      const signal = cancellationSignal();
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      throw new DOMException('the request was aborted', 'AbortError');
    },
  });

  async function failureOf(p: Promise<unknown>): Promise<unknown> {
    return p.then(() => assert.fail('expected a failure'), (e: unknown) => e);
  }

  it('returns results unchanged and maps what each activity throws', async () => {
    assert.equal(await acts.ok(1), 2);
    const config = await failureOf(acts.badConfig());
    assert.ok(config instanceof ApplicationFailure);
    assert.deepEqual([config.type, config.nonRetryable, config.message], ['ConfigError', true, 'unknown domain "poetry"; known domains: math']);
    assert.ok(new ConfigError('x') instanceof WhaleError);
    const corrupt = await failureOf(acts.corrupt());
    assert.ok(corrupt instanceof ApplicationFailure);
    assert.deepEqual([corrupt.type, corrupt.nonRetryable], ['ArtifactIntegrityError', false]);
    const plain = await failureOf(acts.plain());
    assert.ok(plain instanceof ApplicationFailure);
    assert.deepEqual([plain.type, plain.nonRetryable], ['RangeError', false]);
    const purpose = await failureOf(acts.purpose());
    assert.ok(purpose instanceof ApplicationFailure);
    assert.deepEqual([purpose.type, purpose.nonRetryable], ['InvalidHarness', true]);
  });

  it('lets a cancelled activity\'s error reach the SDK as it is, so the attempt counts as cancelled', async () => {
    const env = new MockActivityEnvironment();
    const running = env.run(acts.waitForCancel);
    env.cancel();
    const err = await failureOf(running);
    assert.equal((err as Error).name, 'AbortError', `the AbortError itself, got ${String(err)}`);
    assert.ok(!(err instanceof ApplicationFailure));
  });
});
