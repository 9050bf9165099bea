// The orchestration worker: workflows only (cheap, always on). It never runs activities, so a model or
// proposer worker can be preempted while runs wait safely in their queues. It loads the pre-built workflow
// bundle, and with WHALE_WORKER_DEPLOYMENT set it joins that Worker Deployment with the bundle hash as build id.
import { Worker, type NativeConnection, type WorkerDeploymentOptions } from '@temporalio/worker';
import type { TemporalConfig } from '../temporal.config';
import { resolveWorkflowBundle, type BuiltBundle, type StaleBundlePolicy } from './workflow-bundle';

export { WORKFLOWS_PATH } from './workflow-bundle';

/** WHALE_WORKFLOW_BUNDLE: `auto` (default) builds a missing bundle at start; `prebuilt` refuses to. */
export function staleBundlePolicy(env: NodeJS.ProcessEnv = process.env): StaleBundlePolicy {
  const v = env.WHALE_WORKFLOW_BUNDLE;
  if (v === undefined || v === '' || v === 'auto') return 'rebuild';
  if (v === 'prebuilt') return 'refuse';
  throw new Error(`WHALE_WORKFLOW_BUNDLE must be 'auto' (build a missing bundle at start) or 'prebuilt' (refuse to start without the bundle set-up built); got '${v}'`);
}

/**
 * Worker Versioning, opt-in: WHALE_WORKER_DEPLOYMENT names the Worker Deployment; unset (the default) the
 * worker is unversioned, so `whale dev` and the tests need no `temporal worker deployment set-current-version`.
 * Runs are PINNED to the build that started them and move to a new current build at a phase boundary.
 */
export function workerVersioning(buildId: string, env: NodeJS.ProcessEnv = process.env): WorkerDeploymentOptions | undefined {
  const deploymentName = env.WHALE_WORKER_DEPLOYMENT;
  if (deploymentName === undefined || deploymentName === '') return undefined;
  if (!/^[A-Za-z0-9_.-]+$/.test(deploymentName)) {
    throw new Error(`WHALE_WORKER_DEPLOYMENT must be a deployment name of letters, digits, '.', '_' or '-' (e.g. whale); got '${deploymentName}'`);
  }
  return { useWorkerVersioning: true, version: { deploymentName, buildId }, defaultVersioningBehavior: 'PINNED' };
}

const stderrLine = (line: string): void => void process.stderr.write(`${line}\n`);

/** The bundle for the current workflow sources (pre-built, or built now per WHALE_WORKFLOW_BUNDLE). */
export async function prepareWorkflowBundle(env: NodeJS.ProcessEnv = process.env, log: (line: string) => void = stderrLine): Promise<BuiltBundle> {
  return resolveWorkflowBundle(staleBundlePolicy(env), log);
}

export async function createOrchestrationWorker(
  connection: NativeConnection, config: TemporalConfig, taskQueue = config.taskQueues.orchestration,
  opts: { bundle?: BuiltBundle; env?: NodeJS.ProcessEnv; log?: (line: string) => void } = {},
): Promise<Worker> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? stderrLine;
  const bundle = opts.bundle ?? await prepareWorkflowBundle(env, log);
  const versioning = workerVersioning(bundle.hash, env);
  log(`[whale] orchestration worker: workflow bundle ${bundle.hash}${versioning ? `; Worker Deployment '${versioning.version.deploymentName}', build id ${bundle.hash} (new runs go to the deployment's current version)` : ''}`);
  return Worker.create({
    connection,
    namespace: config.namespace,
    taskQueue,
    workflowBundle: { codePath: bundle.codePath },
    identity: `whale-orchestration@${process.pid}`,
    ...(versioning ? { workerDeploymentOptions: versioning } : {}),
  });
}
