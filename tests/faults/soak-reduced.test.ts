// The soak in reduced form (scripts/soak.ts runs the long one): a small deterministic WHALE run (a weight
// step, a harness phase, a weight step) with real processes, interrupted by a few seeded kills of the
// orchestration worker as a workflow task runs and between tasks. It must complete with the uninterrupted
// run's decisions and hashes, every redone unit must be explained by a kill, and no kill may lose more than
// one heartbeat interval plus one unit.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runSoak } from '../../testbed/soak-run';

describe('soak, reduced', () => {
  it('completes under seeded worker kills with the uninterrupted decisions, hashes and bounded lost work', async (t) => {
    const report = await runSoak({
      seed: 3, kills: 3, serverKills: 0, steps: 2, stepsPerPhase: 1, heartbeatSeconds: 5,
      // 8 prompts per step, D_harness and D_test cut to 8 tasks: about 15 activities, and each kill stalls
      // the run until the restarted worker takes over, so the 3 kills fit.
      runSize: { promptsPerStep: 8, tasks: 8 },
      // No model worker is killed mid step here: the product's partial-checkpoint cadence, not one per minibatch.
      partialCheckpointMs: 2000,
      // Orchestration kills only, inside and between workflow tasks: their states always exist (an inside
      // kill needs only an activity to end after the previous kill). Model-worker kills mid activity are
      // too short-lived to be sure to hit at this size; fine-tune-kill.test.ts (SIGKILL mid step),
      // graceful-shutdown.test.ts (SIGTERM mid rollout and mid step), tests/scale/multi-worker.test.ts
      // (SIGKILL mid rollout batch) and server-loss.test.ts cover them; the long soak draws all kinds.
      // Same config as server-loss.test.ts: the uninterrupted run happens once per source tree.
      sequence: ['orchestration-inside', 'orchestration-between', 'orchestration-inside'],
      referenceCache: path.join(tmpdir(), 'whale-soak-reference-{key}.json'),
      deadlineMs: 30 * 60_000,
      log: (l) => t.diagnostic(l),
    });
    for (const k of report.kills) {
      t.diagnostic(`kill ${k.n} ${k.target} ${k.signal}: ${k.state}; redone ${k.redoneRollouts} rollouts, ${k.redoneMinibatches} minibatches, ${k.redoneSeconds} s (bound ${k.boundSeconds} s)`);
    }
    t.diagnostic(`lost work: ${JSON.stringify(report.lostWork)}; history: ${JSON.stringify(report.history)}; store: ${JSON.stringify(report.store)}`);
    assert.equal(report.killed.status, 'COMPLETED');
    for (const c of report.comparisons) assert.ok(c.equal, `${c.name}: uninterrupted ${c.reference}, killed ${c.killed}`);
    assert.equal(report.kills.length, 3, `kills injected: ${report.kills.map((k) => k.target).join(', ')}`);
    assert.ok(report.kills.every((k) => k.target !== 'server'));
    assert.deepEqual(report.failures, []);
    // Every worker kill left its mark: a killed process was really killed while the run went on.
    assert.ok(report.kills.every((k) => k.recoveryMs !== null));
    assert.deepEqual(report.store.corrupt, []);
  });
});
