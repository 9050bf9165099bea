// Activity proxies for the run workflow, routed per resource: model work (rollouts, fine-tune steps,
// evaluations) to the model queue, proposing and validating harness code to the proposer queue. Options come
// from the run config (workflow input), never from the environment.
import { proxyActivities, type ActivityFunctionWithOptions, type ActivityOptions } from '@temporalio/workflow';
import type { LogContext, WhaleActivities } from '../activities/types';
import type { RunConfig } from './run-config';

type ExecOptions = RunConfig['execution']['rollout'];

type Duration = ActivityOptions['startToCloseTimeout'];

/** Temporal's options for one kind of activity: every value from the run config's `execution` block. */
export function activityOptions(taskQueue: string, o: ExecOptions): ActivityOptions {
  return {
    taskQueue,
    startToCloseTimeout: o.startToCloseTimeout as Duration,
    heartbeatTimeout: o.heartbeatTimeout as Duration,
    // No scheduleToStartTimeout: while no worker serves a queue (preemption), tasks wait there.
    retry: {
      initialInterval: o.initialInterval as Duration, backoffCoefficient: o.backoffCoefficient, maximumInterval: o.maximumInterval as Duration,
      // 0 means unlimited: Temporal wants the field left out for that.
      ...(o.maximumAttempts > 0 ? { maximumAttempts: o.maximumAttempts } : {}),
      nonRetryableErrorTypes: [...o.nonRetryableErrorTypes],
    },
  };
}

/**
 * Adds the run's log context to an activity's input (workers attach it to every log line) and, when given,
 * a one-line summary the Web UI shows on the activity (user metadata: not part of the determinism check).
 */
function withContext<I extends object, R>(fn: ActivityFunctionWithOptions<(input: I) => Promise<R>>, ctx: () => LogContext): (input: I, summary?: string) => Promise<R> {
  return (input, summary) => {
    const args = { ...input, logContext: ctx() };
    return summary === undefined ? fn(args) : fn.executeWithOptions({ summary }, [args]);
  };
}

export function createActivityProxies(config: RunConfig, ctx: () => LogContext) {
  const x = config.execution;
  const model = x.modelTaskQueue;
  const proposer = x.proposerTaskQueue;
  const rollout = proxyActivities<WhaleActivities>(activityOptions(model, x.rollout));
  const fineTune = proxyActivities<WhaleActivities>(activityOptions(model, x.fineTune));
  const evaluate = proxyActivities<WhaleActivities>(activityOptions(model, x.evaluate));
  const propose = proxyActivities<WhaleActivities>(activityOptions(proposer, x.propose));
  return {
    model: {
      prepareRun: withContext(evaluate.prepareRun, ctx),
      rolloutBatch: withContext(rollout.rolloutBatch, ctx),
      fineTuneStep: withContext(fineTune.fineTuneStep, ctx),
      evaluateTest: withContext(evaluate.evaluateTest, ctx),
      evaluateHarness: withContext(evaluate.evaluateHarness, ctx),
    },
    proposer: {
      proposeHarnesses: withContext(propose.proposeHarnesses, ctx),
      validateHarness: withContext(propose.validateHarness, ctx),
      finalizeHarnessPhase: withContext(propose.finalizeHarnessPhase, ctx),
    },
  };
}
export type Acts = ReturnType<typeof createActivityProxies>;
