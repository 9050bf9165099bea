// Retention on a real dev server: a store written by four runs (finished, running with a step in flight,
// finished then deleted, terminated then deleted) and by nobody (unknown objects, a stale name binding, a
// temp file). `whale gc` must list and remove exactly what no live run references, leave the running run's
// files alone (including what its step in flight wrote and has not reported yet), and the running run must
// then finish. `whale status` reports the run's disk use; `whale list` its phase, step and best score.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, utimesSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createTestWorker, ROOT, startTestServer, testConfig, waitFor } from '../workflows/env';
import { storeActivities } from './store-activities';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { planGc } from '../../store/gc';
import { collectLiveReferences } from '../../store/run-references';
import { listRunRows, runDiskUse } from '../../cli/status';
import type { RunSummary } from '../../workflows/run-state';
import { gate } from '../workflows/scripted-activities';

const run = promisify(execFile);
let env: TestWorkflowEnvironment;
let root: string;
before(async () => {
  env = await startTestServer();
  root = mkdtempSync(path.join(tmpdir(), 'whale-gc-'));
});
after(async () => {
  await env?.teardown();
  if (root) rmSync(root, { recursive: true, force: true });
});

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

async function whale(args: string[], extraEnv: Record<string, string> = {}): Promise<string> {
  const { stdout } = await run(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], {
    env: { ...process.env, WHALE_TEMPORAL_ADDRESS: env.address, WHALE_ARTIFACT_DIR: root, ...extraEnv }, timeout: 120_000,
  });
  return stdout;
}

async function requestDeletion(workflowId: string): Promise<void> {
  await env.client.workflowService.deleteWorkflowExecution({ namespace: env.namespace ?? 'default', workflowExecution: { workflowId } });
}

/**
 * Waits until the server no longer lists or describes any of these runs. The dev server takes about half a
 * minute to delete one, so the runs are deleted side by side and polled once a second, not ten times.
 */
async function waitDeleted(workflowIds: string[]): Promise<void> {
  const gone = async (workflowId: string) => {
    for await (const w of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) if (w) return false;
    return env.client.workflow.getHandle(workflowId).describe().then(() => false, () => true);
  };
  await waitFor(`${workflowIds.join(', ')} to be deleted`, async () => ((await Promise.all(workflowIds.map(gone))).every(Boolean) ? true : undefined), 180_000, 1000);
}

describe('whale gc', () => {
  it('removes exactly the artifacts no live or retained run references, and never a running run\'s', async (t) => {
    const q = 'gc';
    const holds = { running: gate(), terminated: gate() };
    const s = storeActivities(root, {
      hold: async (point) => {
        if (point === 'gc-running/fineTuneStep/2') await holds.running.wait();
        if (point === 'gc-terminated/rolloutBatch/2') await holds.terminated.wait();
      },
    });
    const worker: Worker = await createTestWorker(env, q, s.activities);
    const weightsOnly = (steps: number) => testConfig(q, { method: 'weights-only', budget: { totalWeightSteps: steps } });
    // A failed assertion must fail the test, not hang it: the worker's shutdown waits for held activities.
    const release = () => { holds.running.open(); holds.terminated.open(); };
    await worker.runUntil(async () => { try { await body(); } finally { release(); } });
    async function body(): Promise<void> {
      const start = (id: string, config: Record<string, unknown>) => env.client.workflow.start('whaleRun', { taskQueue: q, workflowId: id, args: [config] });
      // Finished and retained: one weight step, one harness phase (an archive), one more weight step.
      const finished = await start('gc-finished', testConfig(q, {
        method: 'whale-fixed', switching: { kind: 'fixed', weightEpochs: 0.5, harnessRounds: 2 }, harness: { candidatesPerRound: 1 }, budget: { totalWeightSteps: 2 },
      }));
      assert.equal(((await finished.result()) as RunSummary).weightStepsDone, 2);
      // Finished, then its history deleted: everything only it used is garbage, its archive too.
      const deleted = await start('gc-deleted', testConfig(q, { method: 'harness-only', harness: { candidatesPerRound: 1 }, budget: { totalWeightSteps: 0, harnessOnlyProposalRounds: 1 } }));
      await deleted.result();
      await requestDeletion('gc-deleted');
      // Terminated in step 2, then deleted.
      const terminated = await start('gc-terminated', weightsOnly(3));
      await holds.terminated.reached;
      await terminated.terminate('test: a run killed mid-step');
      await requestDeletion('gc-terminated');
      holds.terminated.open();
      // Objects and a binding nobody references (another server's runs, a crashed writer), all old.
      const store = new DirectoryArtifactStore(root);
      const unknown = [await store.put('checkpoint', 'UNKNOWN CHECKPOINT'), await store.put('blob', '{"note":"unknown"}')];
      await store.bindName('fine-tune/orphan', unknown[1]);
      mkdirSync(path.join(root, 'objects', 'ab'), { recursive: true });
      const tmp = path.join(root, 'objects', 'ab', `${'c'.repeat(62)}.123.abcdef.tmp`);
      writeFileSync(tmp, 'half-written');
      const old = new Date(Date.now() - 2 * 3600_000);
      for (const f of [path.join(root, 'objects', unknown[0].sha256.slice(0, 2), unknown[0].sha256.slice(2)), path.join(root, 'objects', unknown[1].sha256.slice(0, 2), unknown[1].sha256.slice(2)), path.join(root, 'names', 'fine-tune', 'orphan.json'), tmp]) utimesSync(f, old, old);
      // Running, with step 2's fine-tune in flight (it has written a partial checkpoint and more).
      const running = await start('gc-running', weightsOnly(3));
      await holds.running.reached;
      await waitDeleted(['gc-deleted', 'gc-terminated']);

      // What each run wrote, by label; the expected removals follow from who is gone, not from gc's rules.
      // Garbage: whatever only the deleted runs wrote, and the partial checkpoints of steps that completed.
      const gone = new Set(['gc-deleted', 'gc-terminated']);
      const inFlight = new Set(['partial 2', 'in-flight 2']);
      const scratch = (p: { runId: string; label: string }) => /^(partial|in-flight) /.test(p.label) && !(p.runId === 'gc-running' && inFlight.has(p.label));
      const keptShas = new Set(s.puts.filter((p) => !gone.has(p.runId) && !scratch(p)).map((p) => p.sha256));
      const expectedObjects = [...new Set([...s.puts.map((p) => p.sha256).filter((h) => !keptShas.has(h)), unknown[0].sha256, unknown[1].sha256])].sort();
      const runningStep = s.puts.filter((p) => p.runId === 'gc-running' && inFlight.has(p.label)).map((p) => p.sha256);
      assert.equal(runningStep.length, 2, 'the running run\'s step in flight must have written its partial and in-flight objects');
      const bindingOf = (runId: string, step: number) => `fine-tune/${sha(`${runId}/${step}`)}`;
      const expectedNames = ['fine-tune/orphan', bindingOf('gc-terminated', 1)].sort();

      // A dry run with grace 0 leaves only the reference rules; the default grace keeps all recent files.
      const live = await collectLiveReferences(env.client);
      assert.ok(live.protectSinceMs !== null, 'the running run\'s step in flight must protect what it writes');
      const plan = await planGc(root, live, { graceMs: 0 });
      const extra = plan.objects.map((o) => o.sha256).filter((h) => !expectedObjects.includes(h)).map((h) => `${h.slice(0, 12)}: ${JSON.stringify(s.puts.filter((p) => p.sha256 === h))}`);
      assert.deepEqual(plan.objects.map((o) => o.sha256), expectedObjects, `objects to remove (unexpected: ${extra.join('; ')})`);
      assert.deepEqual(plan.names.map((n) => n.name), expectedNames, 'name bindings to remove');
      assert.deepEqual(plan.archives.map((a) => a.key.split('/')[0]), ['gc-deleted'], 'archives to remove');
      assert.deepEqual(plan.tempFiles.map((f) => path.basename(f.file)), [path.basename(tmp)]);
      assert.ok(!plan.objects.some((o) => runningStep.includes(o.sha256)), 'nothing the step in flight wrote may be listed');
      const graced = await planGc(root, live, { graceMs: 3600_000 });
      assert.deepEqual(graced.objects.map((o) => o.sha256), [unknown[0].sha256, unknown[1].sha256].sort(), 'a 1 h grace keeps every recent object');

      // The CLI: a dry run lists the same and removes nothing; --yes removes exactly that.
      const before = (await store.listObjects()).length;
      const dry = await whale(['gc', '--grace', '0s']);
      assert.deepEqual(dry.split('\n').filter((l) => l.startsWith('  object')).map((l) => l.trim().split(/\s+/)[1]).sort(), expectedObjects);
      assert.match(dry, /dry run: nothing removed/);
      assert.equal((await store.listObjects()).length, before);
      const removed = await whale(['gc', '--grace', '0s', '--yes']);
      assert.match(removed, new RegExp(`removed ${expectedObjects.length} objects, ${expectedNames.length} name bindings, 1 archives, 1 temp files`));
      const left = new Set(await store.listObjects());
      assert.deepEqual(expectedObjects.filter((h) => left.has(h)), [], 'every listed object is gone');
      assert.equal(left.size, before - expectedObjects.length, 'nothing else is gone');
      assert.ok(!existsSync(tmp));
      assert.equal(await store.lookupName('fine-tune/orphan'), undefined);
      assert.ok(await store.lookupName(bindingOf('gc-finished', 1)), 'a live run\'s step binding stays');
      t.diagnostic(`removed ${expectedObjects.length} objects, ${expectedNames.length} bindings, 1 archive, 1 temp file; kept ${left.size} objects`);

      // The running run goes on: its step reads and writes through the store and the run completes.
      holds.running.open();
      const summary = (await running.result()) as RunSummary;
      assert.equal(summary.weightStepsDone, 3);

      // Disk use of a run: the objects its history references, and its archives.
      const use = await runDiskUse(env.client, 'gc-finished', root);
      assert.ok(!('error' in use), JSON.stringify(use));
      if (!('error' in use)) {
        assert.equal(use.archives, 1);
        const referenced = new Set(s.puts.filter((p) => p.runId === 'gc-finished' && !scratch(p) && p.label !== 'fine-tune result').map((p) => p.sha256));
        const bytes = s.puts.filter((p, i, all) => referenced.has(p.sha256) && all.findIndex((x) => x.sha256 === p.sha256) === i).reduce((a, p) => a + p.bytes, 0);
        assert.equal(use.objects, referenced.size);
        assert.equal(use.bytes, bytes);
      }
      const status = await whale(['status', 'gc-finished']);
      assert.match(status, /disk use: +\d.* \d+ objects .* 1 harness archives/);

      const rows = await listRunRows(env.client, undefined, 10);
      const byId = new Map(rows.map((r) => [r.workflowId, r]));
      assert.deepEqual([...byId.keys()].sort(), ['gc-finished', 'gc-running']);
      assert.equal(byId.get('gc-running')?.step, 3);
      assert.equal(byId.get('gc-finished')?.bestScore, 0.25);
      assert.equal(byId.get('gc-finished')?.phase, 'done');
    }
  });
});
