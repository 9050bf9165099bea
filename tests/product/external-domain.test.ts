// Bring your own domain, end to end: the example domain folder (examples/pairs-domain) copied to a folder
// outside the project, a short WHALE run on it started with the real CLI against a real dev server and real
// worker processes, and the audit showing the domain's identity (folder + content hash). No project file
// is touched: the run config names the folder by a relative path.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from '../../testbed/env';
import { domainFiles, hashDomainFolder } from '../../domains/external';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ok, startProductCluster, type ProductCluster } from './cluster';

let cluster: ProductCluster;
before(async () => {
  cluster = await startProductCluster('byod');
});
after(async () => cluster?.teardown());

describe('an external domain folder', () => {
  // The first test's `whale domain check` output; the second reads the pinned ref from it (same folder, still unchanged).
  let checked = '';
  it('runs a short WHALE run end to end through the CLI, and the audit names the folder and its hash', async (t) => {
    const source = path.join(ROOT, 'examples', 'pairs-domain');
    const folder = path.join(cluster.dir, 'my-pairs');
    for (const rel of domainFiles(source)) cpSync(path.join(source, rel), path.join(folder, rel));
    const sha = hashDomainFolder(folder);

    const check = ok(cluster.whale(['domain', 'check', './my-pairs']), 'whale domain check', cluster);
    checked = check;
    assert.match(check, new RegExp(`sha256 ${sha}`));
    assert.match(check, /D_weight 2444, D_harness 128, D_test 128/);
    assert.match(check, /seed harness h0\.ts: loads \(pairs-h0\)/);

    // One cycle of each lever: 1 weight step, a harness phase (round 0 + 1 proposal round), 1 weight step.
    writeFileSync(path.join(cluster.dir, 'run.json'), JSON.stringify({
      version: 1, method: 'whale-fixed', domain: './my-pairs', seed: 3,
      weight: { promptsPerStep: 4, samplesPerPrompt: 2, minibatchSize: 8 },
      switching: { kind: 'fixed', weightEpochs: 0.001, harnessRounds: 2 },
      harness: { candidatesPerRound: 1, taskLimit: 2 },
      budget: { totalWeightSteps: 2 },
      test: { everyEpochs: 1, samplesPerTask: 1, taskLimit: 4 },
    }));
    const t0 = Date.now();
    const run = cluster.whale(['run', 'run.json', '--id', 'byod-1']);
    const summary = ok(run, 'whale run', cluster);
    t.diagnostic(`run took ${((Date.now() - t0) / 1000).toFixed(0)} s:\n${summary}`);
    assert.match(summary, /run byod-1: whale-fixed on file:\/\/.*my-pairs#sha256=/);
    assert.match(summary, /weight steps 2, proposal rounds 1/);
    assert.match(summary, /harness phase 1/);

    ok(cluster.whale(['audit', 'byod-1', '--out', 'audit']), 'whale audit', cluster);
    const md = readFileSync(path.join(cluster.dir, 'audit', 'summary.md'), 'utf8');
    assert.ok(md.includes(`Domain: folder \`${folder}\` (content sha256 \`${sha}\`)`), md.slice(0, 1200));
    assert.match(md, /Lineage: a fresh start/);
    assert.match(md, /Status: \*\*completed\*\*/);
  });

  it('a run on a folder that changed after it was pinned fails at once with a clear error', async () => {
    const folder = path.join(cluster.dir, 'my-pairs');
    const pinned = /ref +(\S+)/.exec(checked)?.[1];
    assert.ok(pinned, `no pinned ref in the domain check's output:\n${checked}`);
    assert.ok(pinned.endsWith(`#sha256=${hashDomainFolder(folder)}`), pinned);
    writeFileSync(path.join(folder, 'NOTES.md'), 'changed after pinning\n');
    const config = JSON.parse(readFileSync(path.join(cluster.dir, 'run.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(path.join(cluster.dir, 'pinned.json'), JSON.stringify({ ...config, domain: pinned }));
    // The CLI checks the pin before starting anything...
    const refused = cluster.whale(['start', 'pinned.json', '--id', 'byod-2']);
    assert.equal(refused.status, 2, refused.stdout + refused.stderr);
    assert.match(refused.stderr, /changed since the run started; restore it/);
    // ...and so does the model worker, for a run started behind the CLI's back: a non-retryable failure.
    const client = new Client({ connection: await Connection.connect({ address: cluster.env.WHALE_TEMPORAL_ADDRESS }) });
    const handle = await client.workflow.start('whaleRun', { taskQueue: 'whale-orchestration', workflowId: 'byod-3', args: [{ ...config, domain: pinned }] });
    const err = await handle.result().then(() => null, (e: unknown) => e);
    assert.ok(err instanceof WorkflowFailedError, String(err));
    const chain: string[] = [];
    for (let e: unknown = err; e instanceof Error; e = (e as Error & { cause?: unknown }).cause) chain.push(e.message);
    assert.match(chain.join(' / '), /changed since the run started/);
    await client.connection.close();
  });
});
