// A run whose weights are a checkpoint pointer (a served model) on a model worker with the embedded sampler:
// the sampler refuses it at once (not retryable: every attempt would refuse it), and the message names
// commands that exist: the worker with an OpenAI-compatible backend, and `whale import` for an exported folder.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { putCheckpointPointer } from '../../backends/checkpoint-pointer';
import { createEmbeddedSampler } from '../../backends/embedded-sampler';
import { ROOT } from '../workflows/env';

let dir: string;
before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'whale-pointer-refusal-'));
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the embedded sampler and a checkpoint pointer', () => {
  it('refuses it, not retryably, naming commands that exist', async () => {
    const store = new DirectoryArtifactStore(dir);
    const ref = await putCheckpointPointer(store, { whaleCheckpointPointer: 1, model: '/models/qwen2-step-3' });
    // The real embedded sampler: had it tried to load the pointer's bytes as weights, the error would be a
    // checkpoint decoding failure, not this refusal.
    const sampler = createEmbeddedSampler({ store, threads: 1, maxBatchRows: 64 });
    const err = await sampler.samplerFor(ref).then(() => null, (e: unknown) => e);
    await sampler.close();
    assert.ok(err instanceof ApplicationFailure, `an ApplicationFailure, got ${String(err)}`);
    assert.equal(err.nonRetryable, true);
    assert.equal(err.type, 'CheckpointPointer');
    assert.match(err.message, /served model \/models\/qwen2-step-3/);
    const commands = [...err.message.matchAll(/node bin\/whale\.js (\w+)(?: (\w+))?/g)].map((m) => [m[1], m[2]].filter(Boolean) as string[]);
    assert.deepEqual(commands.map((c) => c[0]), ['worker', 'import']);
    for (const c of commands) {
      const help = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), c[0], '--help'], { encoding: 'utf8', timeout: 120_000 });
      assert.equal(help.status, 0, `whale ${c[0]} --help: ${help.stderr}`);
    }
  });
});
