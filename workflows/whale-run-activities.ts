// Activity proxies for the run workflow, routed per resource: model work (rollouts, fine-tune steps,
// evaluations) to the model queue, proposing and validating harness code to the proposer queue. Options come
// from the run config (workflow input), never from the environment.
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { WhaleActivities } from '../activities/types';
import type { RunConfig } from './run-config';

type ExecOptions = RunConfig['execution']['rollout'];

function options(taskQueue: string, o: ExecOptions): ActivityOptions {
  return {
    taskQueue,
    startToCloseTimeout: o.startToCloseTimeout as ActivityOptions['startToCloseTimeout'],
    heartbeatTimeout: o.heartbeatTimeout as ActivityOptions['heartbeatTimeout'],
    // No scheduleToStartTimeout: while no worker serves a queue (preemption), tasks wait there.
    retry: {
      initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m',
      // 0 means unlimited: Temporal wants the field left out for that.
      ...(o.maximumAttempts > 0 ? { maximumAttempts: o.maximumAttempts } : {}),
      nonRetryableErrorTypes: ['ConfigError', 'InvalidInput'],
    },
  };
}

export function createActivityProxies(config: RunConfig) {
  const x = config.execution;
  const model = x.modelTaskQueue;
  const proposer = x.proposerTaskQueue;
  const rollout = proxyActivities<WhaleActivities>(options(model, x.rollout));
  const fineTune = proxyActivities<WhaleActivities>(options(model, x.fineTune));
  const evaluate = proxyActivities<WhaleActivities>(options(model, x.evaluate));
  const propose = proxyActivities<WhaleActivities>(options(proposer, x.propose));
  return {
    model: {
      prepareRun: evaluate.prepareRun,
      rolloutBatch: rollout.rolloutBatch,
      fineTuneStep: fineTune.fineTuneStep,
      evaluateTest: evaluate.evaluateTest,
      evaluateHarness: evaluate.evaluateHarness,
    },
    proposer: {
      proposeHarnesses: propose.proposeHarnesses,
      validateHarness: propose.validateHarness,
      finalizeHarnessPhase: propose.finalizeHarnessPhase,
    },
  };
}
export type Acts = ReturnType<typeof createActivityProxies>;
