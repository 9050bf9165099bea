// The tuned agent, exported and used: a short real run (math, deterministic), `whale agent export` to a
// bundle folder, the bundle answering D_test tasks with the server gone, with exactly the rewards the
// run's own final test evaluation recorded for those tasks (same seed, same seed derivation); and
// branching: `whale start --from <bundle>` and `--from <run>` record the lineage, and a run warm-started
// from the bundle starts at the parent's final score.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { ArtifactRef } from '../../store/artifact-ref';
import { BundleManifestSchema } from '../../cli/agent-bundle';
import { waitFor } from '../../testbed/env';
import { ok, startProductCluster, type ProductCluster } from './cluster';

let cluster: ProductCluster;
let client: Client;
before(async () => {
  cluster = await startProductCluster('bundle');
  client = new Client({ connection: await Connection.connect({ address: cluster.env.WHALE_TEMPORAL_ADDRESS }) });
});
after(async () => {
  await client?.connection.close();
  await cluster?.teardown();
});

const runConfig = { version: 1, method: 'weights-only', domain: 'math', seed: 5, weight: { promptsPerStep: 8, samplesPerPrompt: 4, minibatchSize: 8, deterministic: true }, budget: { totalWeightSteps: 1 }, test: { everyEpochs: 1, samplesPerTask: 4, taskLimit: 8 } };

interface EvalFact { label: string; checkpoint: ArtifactRef; harness: ArtifactRef; meanAt8: number; detail: ArtifactRef }

/** The run's completed evaluateTest activities (input pair and result), in order. */
async function evaluations(id: string): Promise<EvalFact[]> {
  const history = await client.workflow.getHandle(id).fetchHistory();
  const decode = (p: { payloads?: { data?: Uint8Array | null }[] | null } | null | undefined) => JSON.parse(Buffer.from(p!.payloads![0].data!).toString('utf8')) as Record<string, unknown>;
  const scheduled = new Map<string, Record<string, unknown>>();
  const out: EvalFact[] = [];
  for (const e of history.events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === 'evaluateTest') scheduled.set(String(e.eventId), decode(s.input));
    const c = e.activityTaskCompletedEventAttributes;
    const input = c ? scheduled.get(String(c.scheduledEventId)) : undefined;
    if (c && input) {
      const r = decode(c.result);
      out.push({ label: String(input.label), checkpoint: ArtifactRef.parse(input.checkpoint), harness: ArtifactRef.parse(input.harness), meanAt8: Number(r.meanAt8), detail: ArtifactRef.parse(r.detail) });
    }
  }
  return out;
}

describe('agent bundle', () => {
  let parentFinal: EvalFact;
  const bundle = () => path.join(cluster.dir, 'bundle');

  it('exports the final agent of a run with its checkpoint, harness, domain tools and scores', async () => {
    writeFileSync(path.join(cluster.dir, 'run.json'), JSON.stringify(runConfig));
    ok(cluster.whale(['run', 'run.json', '--id', 'parent']), 'whale run', cluster);
    const evals = await evaluations('parent');
    parentFinal = evals[evals.length - 1];
    assert.equal(parentFinal.label, 'final');
    const out = ok(cluster.whale(['agent', 'export', 'parent', '--out', 'bundle']), 'whale agent export', cluster);
    assert.match(out, /exported final agent of parent/);
    const manifest = BundleManifestSchema.parse(JSON.parse(readFileSync(path.join(bundle(), 'manifest.json'), 'utf8')));
    assert.equal(manifest.runId, 'parent');
    assert.equal(manifest.checkpoint?.sha256, parentFinal.checkpoint.sha256);
    assert.equal(manifest.hf?.source, 'export', 'the bundle carries the checkpoint as a Hugging Face folder');
    assert.ok(manifest.hf && 'model.safetensors' in manifest.hf.files && 'config.json' in manifest.hf.files);
    assert.equal(manifest.harness.sha256, parentFinal.harness.sha256);
    assert.equal(manifest.scores.exportedMeanAt8, parentFinal.meanAt8);
    assert.equal(manifest.domain.name, 'math');
    assert.deepEqual(manifest.domain.tools.map((t) => (t as { name: string }).name), ['calc']);
    for (const f of ['checkpoint.ckpt', 'harness.ts']) assert.ok(existsSync(path.join(bundle(), f)));
  });

  it('branches: --from <bundle> and --from <run> record the lineage; the warm start begins at the parent\'s final score', async () => {
    ok(cluster.whale(['start', 'run.json', '--from', 'bundle', '--id', 'child-bundle']), 'whale start --from bundle', cluster);
    ok(cluster.whale(['start', 'run.json', '--from', 'parent', '--from-which', 'best', '--id', 'child-run']), 'whale start --from run', cluster);
    // Only child-run's start (its input) is checked: it need not spend the workers' CPU on the rest of its run.
    await client.workflow.getHandle('child-run').terminate('test: only its recorded lineage is checked');
    const initial = await waitFor('the warm-started run\'s initial evaluation', async () => (await evaluations('child-bundle'))[0], 600_000);
    assert.equal(initial.checkpoint.sha256, parentFinal.checkpoint.sha256);
    assert.equal(initial.harness.sha256, parentFinal.harness.sha256);
    assert.equal(initial.meanAt8, parentFinal.meanAt8, 'same pair, seed and tasks: the same D_test score');
    // Nor child-bundle, past its initial evaluation: its lineage is in its history, which the audit reads.
    await client.workflow.getHandle('child-bundle').terminate('test: its initial evaluation is all it had to show');
    ok(cluster.whale(['audit', 'child-bundle', '--out', 'audit-child']), 'whale audit', cluster);
    const md = readFileSync(path.join(cluster.dir, 'audit-child', 'summary.md'), 'utf8');
    assert.match(md, new RegExp(`Lineage: branched from agent bundle \`${bundle().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\` .*exported from run \`parent\`: its final checkpoint \`${parentFinal.checkpoint.sha256.slice(0, 12)}\``));
    const desc = await client.workflow.getHandle('child-run').describe();
    const first = (await client.workflow.getHandle('child-run').fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes?.input;
    const input = JSON.parse(Buffer.from(first!.payloads![0].data!).toString('utf8')) as { lineage: { kind: string; parentRunId: string; which: string }; model: { baseCheckpoint: ArtifactRef } };
    assert.ok(desc.runId);
    assert.deepEqual([input.lineage.kind, input.lineage.parentRunId, input.lineage.which], ['run', 'parent', 'best']);
    assert.equal(input.model.baseCheckpoint.sha256, parentFinal.checkpoint.sha256, 'one weight step: best is the final pair here');
  });

  it('answers D_test tasks with no server, with the rewards of the run\'s own test evaluation', async (t) => {
    const detail = JSON.parse((await new DirectoryArtifactStore(cluster.artifactDir).get(parentFinal.detail)).toString('utf8')) as { tasks: { taskId: string; rewards: number[]; answers: (string | null)[] }[] };
    await cluster.stop();
    // A task the run solved in some samples and not in others, if there is one (8 tasks x 4 samples at ~6 %).
    const mixed = detail.tasks.find((x) => x.rewards.includes(1) && x.rewards.includes(0)) ?? detail.tasks.find((x) => x.rewards.includes(1));
    const picks = [...new Set([mixed ?? detail.tasks[1], detail.tasks[0]])];
    for (const task of picks) {
      const r = ok(cluster.whale(['agent', 'run', 'bundle', task.taskId, '--samples', String(task.rewards.length), '--json']), 'whale agent run', cluster);
      const got = JSON.parse(r) as { rewards: number[]; seed: number; task: { split: string }; trajectories: { finalAnswer: string | null }[] };
      assert.equal(got.seed, runConfig.seed);
      assert.equal(got.task.split, 'test');
      assert.deepEqual(got.rewards, task.rewards, `task ${task.taskId}`);
      assert.deepEqual(got.trajectories.map((x) => x.finalAnswer), task.answers, `task ${task.taskId}: final answers`);
      t.diagnostic(`${task.taskId}: bundle rewards ${got.rewards.join('')} answers ${JSON.stringify(task.answers)} = run's`);
    }
    t.diagnostic(`run's final evaluation: ${detail.tasks.filter((x) => x.rewards.includes(1)).length}/${detail.tasks.length} tasks solved in some sample`);
    const text = ok(cluster.whale(['agent', 'run', 'bundle', 'Ana has 12 apples. Ana gets 30 more. How many apples does Ana have now?']), 'whale agent run (free text)', cluster);
    assert.match(text, /\(free text\)/);
    assert.match(text, /\[user\] Ana has 12 apples/);
    assert.match(text, /reward: n\/a/);
  });
});
