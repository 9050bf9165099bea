// `whale bench compare --workers auto` resumed right after its workers were killed: the server still lists the
// dead model worker's poller, so the command starts only the other workers at first; it must then notice the
// poller has stopped and start a model worker itself, and the run must finish (before, it waited forever).
// Real processes: a dev server of its own, a real model worker SIGKILLed, the CLI as a subprocess.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startFaultCluster, type FaultCluster } from '../../testbed/fault-cluster';
import { ROOT, waitFor } from '../workflows/env';
import { POLLER_LIVE_MS, unpolledKinds } from '../../cli/local-processes';
import type { RunResult } from '../../bench/compare';

let cluster: FaultCluster;
let out: string;

before(async () => {
  cluster = await startFaultCluster({ workerEnv: { WHALE_MODEL_THREADS: '1' } });
  out = mkdtempSync(path.join(tmpdir(), 'whale-bench-stale-'));
});
after(async () => {
  await cluster?.teardown();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('whale bench compare --workers auto after killed workers', () => {
  it('starts a model worker once the dead one\'s poller stops counting, and the run finishes', { timeout: 300_000 }, async (t) => {
    cluster.startWorker('model');
    await waitFor('the model worker to poll', async () => (!(await unpolledKinds(cluster.client, cluster.config)).includes('model') ? true : undefined), 120_000);
    await cluster.kill('model'); // as a killed invocation leaves its workers: dead, their pollers still listed
    const killedAt = Date.now();

    const args = ['bench', 'compare', '--domains', 'math', '--seeds', '0,', '--methods', 'weights-only', '--budget', '8', '--sizes', 'tiny', '--out', out];
    const env = {
      ...process.env, WHALE_TEMPORAL_ADDRESS: cluster.config.address, WHALE_DEV_PORT: String(cluster.config.devServer.port), WHALE_DEV_UI_PORT: String(cluster.config.devServer.uiPort),
      WHALE_DEV_DATA_DIR: cluster.config.devServer.dataDir, WHALE_ARTIFACT_DIR: cluster.config.artifactDir, WHALE_MODEL_THREADS: '1',
    };
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.once('exit', (code) => resolve({ code, stderr }));
    });
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('[bench]'));
    t.diagnostic(`${((Date.now() - killedAt) / 1000).toFixed(0)} s after the kill:\n${lines.join('\n')}`);
    assert.equal(r.code, 0, r.stderr);
    // At the start the dead worker's poller still looked live (it had polled less than POLLER_LIVE_MS before).
    assert.ok(lines.some((l) => l === '[bench] started workers: orchestration, proposer (logs in .data/logs/bench-*.log)'), lines.join('\n'));
    assert.ok(lines.some((l) => /^\[bench\] no live worker polls the model queue \(earlier pollers stopped\): started model/.test(l)), lines.join('\n'));
    assert.ok(Date.now() - killedAt > POLLER_LIVE_MS - 60_000, 'the model worker could only start after the dead poller expired');
    const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as { runs: RunResult[]; missing: string[] };
    assert.deepEqual([results.missing, results.runs.map((x) => [x.method, x.seed, x.rolloutsUsed])], [[], [['weights-only', 0, 8]]]);
  });
});
