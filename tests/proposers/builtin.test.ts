// The built-in proposer: every candidate it writes over several rounds for each domain's h0 passes the real
// sandbox validator (and the smoke run); it is seeded and deterministic; prompt-only mode changes only the
// two prompt strings; its transformations carry no domain literals.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { runEpisodes } from '../../agent/loop';
import { recordCandidateEvaluation } from '../../activities/archive';
import { applyEdits, parseHarnessSource } from '../../activities/proposers/harness-source';
import { setHooks, type HookPlan } from '../../activities/proposers/hook-templates';
import { promptOnlyDifferences } from '../../activities/proposers/validation';
import { readSeedHarness } from '../../domains/harnesses';
import { getDomain, type BuiltinDomainName } from '../../domains/registry';
import { SandboxPool } from '../../harness-sandbox/pool';
import { ScriptedBackend } from '../agent/scripted-backend';
import { fakeTrajectories, proposeInput, setUp, type Harnessed } from './fixtures';

const pool = new SandboxPool();
after(() => pool.close());
const DOMAINS: BuiltinDomainName[] = ['search-qa', 'math', 'chess'];

/** Runs `rounds` proposal rounds; valid candidates get a deterministic score so later rounds build on them. */
async function search(h: Harnessed, domain: string, rounds: number, o: { seed?: number; promptOnly?: boolean; validate?: boolean } = {}) {
  const out: Array<{ name: string; source: string; axis: string; changes: string; valid: boolean | null; reason: string | null }> = [];
  const base = await h.store.put('harness', readSeedHarness(domain));
  for (let round = 1; round <= rounds; round++) {
    const r = await h.acts.proposeHarnesses(proposeInput(h, domain, round, { kind: 'builtin' }, { seed: o.seed ?? 7, promptOnly: o.promptOnly ?? false }));
    assert.equal(r.failure, null, `round ${round}: ${r.failure}`);
    assert.equal(r.candidates.length, 3);
    for (const [i, c] of r.candidates.entries()) {
      const source = (await h.store.get(c.source)).toString('utf8');
      let valid: boolean | null = null;
      let reason: string | null = null;
      if (o.validate !== false) {
        const v = await h.acts.validateHarness({ runId: 'run', domain, archiveKey: h.archiveKey, name: c.name, source: c.source, promptOnlyBase: o.promptOnly ? base : null });
        valid = v.valid;
        reason = v.reason;
        assert.equal(v.rollouts, 0);
      }
      out.push({ name: c.name, source, axis: c.axis, changes: c.changes, valid, reason });
      const score = 0.2 + ((round * 7 + i * 3) % 10) / 50;
      await recordCandidateEvaluation(h.archive, c.name, { successRate: score, meanTurns: 2, meanTokens: 30, rollouts: 12, trajectoriesJsonl: fakeTrajectories(12, 3 + i), source });
    }
  }
  return out;
}

test('built-in candidates for every domain h0 pass the real sandbox validator (3 rounds x 3)', async () => {
  for (const domain of DOMAINS) {
    const h = await setUp(domain, pool);
    try {
      const cands = await search(h, domain, 3);
      for (const c of cands) assert.equal(c.valid, true, `${domain} ${c.name} (${c.changes}): ${c.reason}\n${c.source}`);
      assert.equal(new Set(cands.map((c) => c.source)).size, cands.length, 'no duplicate candidates');
      assert.ok(new Set(cands.map((c) => c.axis)).size >= 3, `${domain}: axes used ${[...new Set(cands.map((c) => c.axis))]}`);
      const validation = JSON.parse(readFileSync(path.join(h.archive.candidateDir('r1-c1'), 'validation.json'), 'utf8')) as { valid: boolean; smoke: string };
      assert.equal(validation.valid, true);
      assert.match(validation.smoke, /D_harness task views/);
      const pending = JSON.parse(readFileSync(path.join(h.archive.roundDir(1), 'pending_eval.json'), 'utf8')) as { candidates: Array<{ hypothesis: string; axis: string }> };
      assert.equal(pending.candidates.length, 3);
      assert.ok(pending.candidates.every((c) => c.hypothesis.length > 10 && c.axis.length > 0));
    } finally {
      h.cleanup();
    }
  }
});

test('built-in proposer is seeded and deterministic: same archive and seed, same candidates', async () => {
  const runs: string[][] = [];
  for (const seed of [11, 11, 12]) {
    const h = await setUp('search-qa', pool);
    try {
      runs.push((await search(h, 'search-qa', 3, { seed, validate: false })).map((c) => c.source));
    } finally {
      h.cleanup();
    }
  }
  assert.deepEqual(runs[0], runs[1]);
  assert.notDeepEqual(runs[0], runs[2], 'another seed explores differently');
});

test('prompt-only mode changes only systemPrompt and userTemplate, and the validator enforces it', async () => {
  for (const domain of DOMAINS) {
    const h = await setUp(domain, pool);
    try {
      const h0 = readSeedHarness(domain);
      const cands = await search(h, domain, 2, { promptOnly: true });
      for (const c of cands) {
        assert.equal(c.valid, true, `${domain} ${c.name}: ${c.reason}`);
        assert.deepEqual(promptOnlyDifferences(h0, c.source), []);
        assert.notEqual(c.source, h0);
        assert.ok(['prompt', 'observation', 'crossover'].includes(c.axis), c.axis);
      }
      // A candidate changing a turn limit is rejected in prompt-only mode with a clear reason.
      const bad = await h.store.put('harness', h0.replace(/maxTurns: \d+/, 'maxTurns: 5'));
      const base = await h.store.put('harness', h0);
      const v = await h.acts.validateHarness({ runId: 'run', domain, archiveKey: h.archiveKey, name: 'r9-c1', source: bad, promptOnlyBase: base });
      assert.equal(v.valid, false);
      assert.equal(v.failureKind, 'prompt-only-violation');
      assert.match(v.reason ?? '', /maxTurns/);
    } finally {
      h.cleanup();
    }
  }
});

test('the built-in catalogue has no domain literals (generic across domains)', () => {
  const dir = path.join(__dirname, '../../activities/proposers');
  const literals = /\b(search-qa|searchqa|chess|math|legalMoves\w*|fen|calc|boxed|uci|board)\b|['"`]search['"`]/i;
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
    // Code only: comments may explain; `Math.` is JavaScript's, not the domain's.
    const code = readFileSync(path.join(dir, f), 'utf8').replace(/^\s*\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\bMath\./g, '');
    const hit = literals.exec(code);
    assert.equal(hit, null, `${f} mentions ${hit?.[0]}`);
  }
});

test('forced first tool: one form has the harness call the first tool on the question, the other resamples answers until a tool call', async () => {
  const inst = getDomain('search-qa').load({ kind: 'synthetic' });
  const tasks = inst.splits.harness.slice(0, 4);
  const h0 = readSeedHarness('search-qa');
  const info = parseHarnessSource(h0);
  assert.ok(info);
  const sampling = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 32, maxEpisodeTokens: 512 };
  const run = async (plans: HookPlan[], script: (prompt: string) => string, retries: number, turns: number) => {
    const source = applyEdits(h0, setHooks(info, plans, '<answer>answer</answer>') ?? [])
      .replace('formatErrors: 0', `formatErrors: ${retries}`).replace('maxTurns: 2', `maxTurns: ${turns}`);
    const loaded = await pool.loadHarness(source);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.failure.reason);
    return (await runEpisodes({ backend: new ScriptedBackend(script), environment: inst.environment, harness: loaded.runner, tasks, samplesPerTask: 1, sampling, runSeed: 1, step: 0 })).trajectories;
  };
  // A model that answers at once on the first turn and answers again once it has seen a tool result.
  const answerFirst = (prompt: string) => (prompt.includes('<|tool|>') ? '<answer>Nobody</answer>' : '<answer>Somebody</answer>');
  for (const t of await run([{ hook: 'parseAction', plan: { firstTool: true, callWithQuestion: true } }], answerFirst, 0, 2)) {
    const task = tasks.find((x) => x.id === t.taskId);
    assert.equal(t.turns[0].tool?.tool, 'search');
    assert.equal(t.turns[0].tool?.input, task?.question);
    assert.equal(t.turns[1].action.kind, 'answer');
  }
  // Resampling: this model answers the first time it sees a context and searches the second time it sees the
  // same one. Its answer is rejected, the rejected turn is dropped (no error text reaches the model), the same
  // context is sampled again, and the episode goes on with the search.
  const seen = new Map<string, number>();
  const prompts: string[] = [];
  const secondTimeSearches = (prompt: string) => {
    prompts.push(prompt);
    if (prompt.includes('<|tool|>')) return '<answer>Nobody</answer>';
    const n = (seen.get(prompt) ?? 0) + 1;
    seen.set(prompt, n);
    return n === 1 ? '<answer>Somebody</answer>' : '<search>who</search>';
  };
  const resample: HookPlan[] = [
    { hook: 'parseAction', plan: { firstTool: true, untilTool: true } },
    { hook: 'feedback', plan: { annotateTool: false, toolChars: 0, nudge: false, fields: [], syntaxReminder: true, dropRejected: true } },
  ];
  for (const t of await run(resample, secondTimeSearches, 4, 6)) {
    assert.deepEqual(t.turns.map((x) => x.action.kind), ['none', 'tool', 'answer'], JSON.stringify(t.turns));
    assert.match(t.turns[0].action.kind === 'none' ? t.turns[0].action.reason : '', /before answering/);
    assert.equal(t.turns[1].tool?.input, 'who');
    assert.equal(t.finalAnswer, 'nobody'); // normalised by the environment
  }
  assert.equal(prompts.filter((p) => p.includes('Format error')).length, 0, 'a rejected turn must not be shown to the model');
  assert.equal(seen.size, tasks.length);
  // A model that never calls a tool uses up the format retries and the episode ends without an answer.
  for (const t of await run(resample, () => '<answer>Somebody</answer>', 2, 6)) {
    assert.deepEqual(t.turns.map((x) => x.action.kind), ['none', 'none', 'none']);
    assert.equal(t.reward, 0);
  }
});
