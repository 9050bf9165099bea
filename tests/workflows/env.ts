// A real Temporal dev server for workflow tests: the project-local `temporal` binary through
// TestWorkflowEnvironment.createLocal, with the project's search attributes registered.
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, type WorkflowBundlePath } from '@temporalio/worker';
import { buildWorkflowBundle } from '../../workers/workflow-bundle';
import type { WhaleActivities } from '../../activities/types';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { freePort, ROOT, waitFor } from '../../testbed/env';

// Worker chatter (state changes, bundling) would bury test output; warnings and errors still show.
Runtime.install({ logger: new DefaultLogger('WARN') });

// The project root, a free port and a poll with a deadline: shared with the process harnesses of testbed/.
export { freePort, ROOT, waitFor };

export function temporalBinary(): string {
  const p = process.env.TEMPORAL_CLI_PATH ?? path.join(ROOT, '.tools', 'bin', 'temporal');
  if (!existsSync(p)) throw new Error(`temporal CLI not found at ${p}: run \`bash scripts/setup.sh\` first`);
  return p;
}

/**
 * Runs the `temporal` CLI against `address`; resolves with its combined output and exit code. Asynchronous on
 * purpose: a test's worker runs in the test process and must keep serving while the CLI waits.
 */
export function runTemporalCli(address: string, ...args: string[]): Promise<{ out: string; code: number | null }> {
  return new Promise((resolve) => {
    execFile(temporalBinary(), [...args, '--address', address], { encoding: 'utf8' }, (err, stdout, stderr) => {
      resolve({ out: stdout + stderr, code: err ? (typeof err.code === 'number' ? err.code : 1) : 0 });
    });
  });
}

export async function startTestServer(extraArgs: string[] = []): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: temporalBinary() },
      searchAttributes: ALL_SEARCH_ATTRIBUTES,
      extraArgs,
      log: { format: 'pretty', level: 'error' },
    },
  });
}

let bundle: Promise<WorkflowBundlePath> | undefined;
/**
 * The workflow bundle of the current sources: the one set-up pre-built under .data/workflow-bundle (keyed by
 * the content hash of every workflow source, so it is never stale), built there first when the sources
 * changed. What the orchestration workers load too; a webpack build per test process would cost ~4 CPU-s.
 */
export async function workflowBundle(): Promise<WorkflowBundlePath> {
  bundle ??= buildWorkflowBundle().then((b) => ({ codePath: b.codePath }));
  return bundle;
}

/** One worker serving both the orchestration queue (workflows) and the activity queues of a test. */
export async function createTestWorker(env: TestWorkflowEnvironment, taskQueue: string, activities?: WhaleActivities): Promise<Worker> {
  return Worker.create({
    connection: env.nativeConnection, taskQueue, workflowBundle: await workflowBundle(),
    ...(activities ? { activities } : {}),
  });
}

export async function createActivityWorker(env: TestWorkflowEnvironment, taskQueue: string, activities: WhaleActivities): Promise<Worker> {
  return Worker.create({ connection: env.nativeConnection, taskQueue, activities });
}

/** A run config for tests: every activity on `queue`, small sizes, the given method and policy. */
export function testConfig(queue: string, overrides: Record<string, unknown>): Record<string, unknown> {
  return {
    version: 1,
    domain: 'test-domain',
    weight: { promptsPerStep: 10, samplesPerPrompt: 2 },
    test: { everyEpochs: 1, samplesPerTask: 2 },
    execution: { modelTaskQueue: queue, proposerTaskQueue: queue },
    ...overrides,
  };
}
