// Saves a finished test run's history under tests/histories/v<state version>/ when WHALE_RECORD_HISTORIES=1,
// so replay tests guard the workflow code against non-deterministic changes. Histories are only
// re-recorded together with a state-version bump; older versions' files stay.
import { writeFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { STATE_VERSION } from '../../workflows/run-state';
import { ROOT } from './env';

export async function maybeRecordHistory(client: Client, workflowId: string, name: string): Promise<void> {
  if (process.env.WHALE_RECORD_HISTORIES !== '1') return;
  const dir = path.join(ROOT, 'tests', 'histories', `v${STATE_VERSION}`);
  mkdirSync(dir, { recursive: true });
  // Every run of a continue-as-new chain is saved, oldest first.
  const runs: { start: number; runId: string }[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push({ start: w.startTime.getTime(), runId: w.runId });
  runs.sort((a, b) => a.start - b.start);
  for (const [i, r] of runs.entries()) {
    const history = await client.workflow.getHandle(workflowId, r.runId).fetchHistory();
    writeFileSync(path.join(dir, `${name}${runs.length > 1 ? `-run${i}` : ''}.json`), historyToJSON(history));
  }
}
