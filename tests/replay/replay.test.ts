// Replay tests: every recorded history under tests/histories/v*/ must replay against the current workflow
// code without a non-determinism error. Old state versions' histories stay to guard the upgrade path.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import { workflowBundle, ROOT } from '../workflows/env';

const HISTORIES = path.join(ROOT, 'tests', 'histories');

function historyFiles(): string[] {
  return readdirSync(HISTORIES)
    .filter((d) => /^v\d+$/.test(d))
    .flatMap((d) => readdirSync(path.join(HISTORIES, d)).filter((f) => f.endsWith('.json')).map((f) => path.join(HISTORIES, d, f)))
    .sort();
}

describe('replay of recorded histories', () => {
  const files = historyFiles();
  it('has recorded histories for the current state version', () => {
    assert.ok(files.some((f) => f.includes(`${path.sep}v1${path.sep}`)), 'tests/histories/v1 must hold histories (record with WHALE_RECORD_HISTORIES=1)');
    assert.ok(files.length >= 5, `expected at least 5 histories, found ${files.length}`);
  });
  for (const file of files) {
    it(`replays ${path.relative(HISTORIES, file)}`, async () => {
      const history = JSON.parse(readFileSync(file, 'utf8'));
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, path.basename(file, '.json'));
    });
  }
});
