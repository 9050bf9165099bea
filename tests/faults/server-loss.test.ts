// Server loss: the Temporal dev server is killed mid-run (SIGKILL or SIGTERM by the seeded schedule, while an
// activity is in flight) and restarted on the same SQLite database while the worker processes keep running.
// The run completes with the uninterrupted run's decisions and hashes, and nothing is lost: no rollout or
// minibatch runs twice.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runSoak } from '../../testbed/soak-run';

describe('server loss', () => {
  it('survives the dev server killed and restarted on the same database mid-run, with nothing lost', async (t) => {
    const report = await runSoak({
      seed: 3, kills: 1, serverKills: 1, steps: 2, stepsPerPhase: 1,
      // The sizes of soak-reduced.test.ts (a weight step, a harness phase, a weight step): one reference for both.
      runSize: { promptsPerStep: 8, tasks: 8 },
      // No model worker is killed mid step here: the product's partial-checkpoint cadence, not one per minibatch.
      partialCheckpointMs: 2000,
      // Longer than the server is down (restart included): a heartbeat deadline that passes while no server
      // runs times the attempt out when it comes back, and that attempt's work would be redone.
      heartbeatSeconds: 30,
      referenceCache: path.join(tmpdir(), 'whale-soak-reference-{key}.json'),
      deadlineMs: 30 * 60_000,
      log: (l) => t.diagnostic(l),
    });
    t.diagnostic(`lost work: ${JSON.stringify(report.lostWork)}; history: ${JSON.stringify(report.history)}`);
    assert.equal(report.killed.status, 'COMPLETED');
    for (const c of report.comparisons) assert.ok(c.equal, `${c.name}: uninterrupted ${c.reference}, killed ${c.killed}`);
    assert.equal(report.kills.length, 1);
    assert.ok(report.kills.every((k) => k.target === 'server' && k.recoveryMs !== null));
    assert.equal(report.lostWork.rollouts, 0);
    assert.equal(report.lostWork.minibatches, 0);
    assert.deepEqual(report.lostWork.byJournalDifference, { rollouts: 0, minibatches: 0 });
    assert.deepEqual(report.failures, []);
  });
});
