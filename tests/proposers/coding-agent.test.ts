// The coding-agent proposer end to end with a stand-in agent (a node script that behaves like a real
// agent at the file level: reads TASK.md, SKILL.md and archive files, writes slot files and
// pending_eval.json, reports usage on stdout), and the ways a proposer can fail: timeout, writing nothing,
// invalid code, overwriting archive files outside its slots, a non-zero exit. None corrupts the archive.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ProposeHarnessesResult } from '../../activities/types';
import { SandboxPool } from '../../harness-sandbox/pool';
import { cleanupDir, proposeInput, setUp, type Harnessed } from './fixtures';

const pool = new SandboxPool();
after(() => pool.close());
const scriptsDir = mkdtempSync(path.join(os.tmpdir(), 'whale-agent-scripts-'));
after(() => cleanupDir(scriptsDir));

/** Writes a stand-in agent: shared prelude (reads the task like an agent would) + a behaviour. */
function agent(name: string, behaviour: string): string[] {
  const file = path.join(scriptsDir, `${name}.mjs`);
  writeFileSync(file, `
import { readFileSync, writeFileSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
const task = readFileSync('TASK.md', 'utf8');
const skill = readFileSync('SKILL.md', 'utf8');
if (!skill.includes('pending_eval.json') || !task.includes('candidates/incoming/harness.ts')) { console.error('task or skill file incomplete'); process.exit(3); }
const K = Number(process.env.WHALE_CANDIDATES);
const list = (d) => readdirSync(d).flatMap((f) => statSync(join(d, f)).isDirectory() ? list(join(d, f)) : [join(d, f)]);
console.log('FILES ' + JSON.stringify(list('.')));
const accepted = readFileSync('candidates/incoming/harness.ts', 'utf8');
const score = JSON.parse(readFileSync('candidates/incoming/score.json', 'utf8'));
const failed = readFileSync('candidates/incoming/trajectories.jsonl', 'utf8').split('\\n').filter(Boolean).map((l) => JSON.parse(l)).filter((t) => t.reward === 0);
${behaviour}
`);
  return [process.execPath, file];
}

const GOOD = `
const edits = [
  ['systemPrompt', "systemPrompt: 'Read the question twice, then reply with the answer tag.',"],
  ['maxTurns', 'maxTurns: 4,'],
];
for (let i = 1; i <= Math.min(K, edits.length); i++) {
  const [key, line] = edits[i - 1];
  writeFileSync('proposals/c' + i + '.ts', accepted.replace(new RegExp('^\\\\s*' + key + ':.*$', 'm'), '  ' + line));
}
writeFileSync('notes/report.md', 'incoming success ' + score.successRate + ', ' + failed.length + ' failures read');
writeFileSync('pending_eval.json', JSON.stringify({ candidates: [
  { file: 'proposals/c1.ts', parent: 'incoming', hypothesis: 'a clearer system prompt (' + failed.length + ' failures read)', changes: 'systemPrompt', axis: 'prompt' },
  { file: 'proposals/c2.ts', parent: 'incoming', hypothesis: 'more turns', changes: 'maxTurns 2 -> 4', axis: 'control' },
] }));
console.log(JSON.stringify({ type: 'result', total_cost_usd: 0.0123, usage: { input_tokens: 1000, output_tokens: 234 } }));
`;

/** sha256 of every file under the archive's candidates folder (what a proposer must never change). */
function snapshot(h: Harnessed): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const f of readdirSync(d)) {
      const p = path.join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else out[path.relative(h.archive.dir, p)] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(path.join(h.archive.dir, 'candidates'));
  return out;
}

test('coding agent end to end: reads the archive copy, writes slots and pending_eval.json; usage recorded', async () => {
  const h = await setUp('math', pool);
  try {
    const r = await h.acts.proposeHarnesses(proposeInput(h, 'math', 1, { kind: 'coding-agent', command: agent('good', GOOD), timeoutMs: 30_000 }));
    assert.equal(r.failure, null);
    assert.deepEqual(r.candidates.map((c) => [c.name, c.parent, c.axis]), [['r1-c1', 'incoming', 'prompt'], ['r1-c2', 'incoming', 'control']]);
    assert.match(r.candidates[0].hypothesis, /failures read/);
    assert.equal(r.cost.tokens, 1234);
    assert.equal(r.cost.usd, 0.0123);
    for (const c of r.candidates) {
      const v = await h.acts.validateHarness({ runId: 'run', domain: 'math', archiveKey: h.archiveKey, name: c.name, source: c.source, promptOnlyBase: null });
      assert.equal(v.valid, true, v.reason ?? '');
      assert.equal(readFileSync(path.join(h.archive.candidateDir(c.name), 'harness.ts'), 'utf8'), (await h.store.get(c.source)).toString());
    }
    const log = readFileSync(path.join(h.archive.roundDir(1), 'proposer.log'), 'utf8');
    const files = JSON.parse(/FILES (.*)/.exec(log)?.[1] ?? '[]') as string[];
    assert.ok(files.includes('candidates/incoming/trajectories.jsonl'), 'the agent sees the D_harness traces');
    // The agent's cwd holds only the archive copy, the skill and task files and its own folders.
    for (const f of files) assert.match(f, /^(candidates\/|rounds\/|SKILL\.md$|TASK\.md$)/, f);
    // A retry of the same round returns the recorded result without running the agent again.
    const again = await h.acts.proposeHarnesses(proposeInput(h, 'math', 1, { kind: 'coding-agent', command: agent('explode', 'process.exit(9);'), timeoutMs: 30_000 }));
    assert.deepEqual(again, r);
  } finally {
    h.cleanup();
  }
});

const FAILURES: Array<{ what: string; behaviour: string; timeoutMs?: number; failure: RegExp; candidates: number }> = [
  { what: 'times out', behaviour: "writeFileSync('proposals/c1.ts', accepted); setInterval(() => {}, 1000);", timeoutMs: 1_500, failure: /timed out after 1500 ms/, candidates: 0 },
  { what: 'writes nothing', behaviour: '', failure: /wrote no candidate files/, candidates: 0 },
  { what: 'writes invalid code', behaviour: "writeFileSync('proposals/c1.ts', 'export default {{{ not typescript'); writeFileSync('pending_eval.json', '{\"candidates\":[{\"file\":\"c1\",\"hypothesis\":\"h\",\"axis\":\"a\"}]}');", failure: /syntax errors/, candidates: 1 },
  {
    what: 'overwrites files outside its slots',
    behaviour: "writeFileSync('proposals/c1.ts', accepted); writeFileSync('candidates/incoming/score.json', '{\"successRate\":1}'); writeFileSync('candidates/incoming/harness.ts', 'hacked');",
    failure: /modified archive files outside its slots.*candidates\/incoming\/(harness\.ts|score\.json)/, candidates: 0,
  },
  { what: 'links its slot to a file outside the workspace', behaviour: "symlinkSync('/etc/hostname', 'proposals/c1.ts'); symlinkSync('/etc/hostname', 'pending_eval.json');", failure: /wrote no candidate files/, candidates: 0 },
  { what: 'exits non-zero', behaviour: "writeFileSync('proposals/c1.ts', accepted); console.error('model overloaded'); process.exit(2);", failure: /exited with 2: model overloaded/, candidates: 0 },
];

for (const f of FAILURES) {
  test(`a coding agent that ${f.what} cannot corrupt the archive; the round is logged as failed`, async () => {
    const h = await setUp('search-qa', pool);
    try {
      const before = snapshot(h);
      const r = await h.acts.proposeHarnesses(proposeInput(h, 'search-qa', 1, { kind: 'coding-agent', command: agent(f.what.replace(/\W+/g, '-'), f.behaviour), timeoutMs: f.timeoutMs ?? 30_000 }));
      assert.match(r.failure ?? '', f.failure);
      assert.equal(r.candidates.length, f.candidates);
      const after = snapshot(h);
      for (const [file, hash] of Object.entries(before)) assert.equal(after[file], hash, `${file} changed`);
      assert.match(readFileSync(path.join(h.archive.roundDir(1), 'proposer.log'), 'utf8'), /failure: /);
      // Invalid code becomes an invalid row with its reason, never an exception.
      for (const c of r.candidates) {
        const v = await h.acts.validateHarness({ runId: 'run', domain: 'search-qa', archiveKey: h.archiveKey, name: c.name, source: c.source, promptOnlyBase: null });
        assert.equal(v.valid, false);
        assert.equal(v.failureKind, 'compile-error');
      }
      // The phase goes on: the next round with a working proposer succeeds on the same archive.
      const next = await h.acts.proposeHarnesses(proposeInput(h, 'search-qa', 2, { kind: 'builtin' }));
      assert.equal(next.failure, null);
      assert.equal(next.candidates.length, 3);
    } finally {
      h.cleanup();
    }
  });
}

test('inside an activity: heartbeats while the agent runs; cancellation kills it and records nothing', async () => {
  const { MockActivityEnvironment } = await import('@temporalio/testing');
  const h = await setUp('math', pool, { heartbeatMs: 50 });
  try {
    // The agent works until it sees a file the test writes only after enough heartbeats arrived.
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const flag = path.join(scriptsDir, 'go');
    const waiting = `const t = setInterval(() => { try { readFileSync(${JSON.stringify(flag)}); clearInterval(t); ${GOOD.replace(/\n/g, ' ')} } catch {} }, 20);`;
    const pending: Promise<ProposeHarnessesResult> = env.run(h.acts.proposeHarnesses, proposeInput(h, 'math', 1, { kind: 'coding-agent', command: agent('waits', waiting), timeoutMs: 30_000 }));
    const deadline = Date.now() + 20_000;
    while (beats.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.ok(beats.length >= 3, `heartbeats: ${beats.length}`);
    writeFileSync(flag, '');
    const r = await pending;
    assert.equal(r.failure, null);
    assert.equal(r.candidates.length, 2);

    // Cancelled while the agent runs forever: the activity throws, and round 2 has no recorded result.
    const env2 = new MockActivityEnvironment();
    let started = false;
    env2.on('heartbeat', () => (started = true));
    const running = env2.run(h.acts.proposeHarnesses, proposeInput(h, 'math', 2, { kind: 'coding-agent', command: agent('forever', 'setInterval(() => {}, 1000);'), timeoutMs: 30_000 }));
    const deadline2 = Date.now() + 20_000;
    while (!started && Date.now() < deadline2) await new Promise((r) => setTimeout(r, 20));
    env2.cancel();
    await assert.rejects(running);
    assert.equal(await h.archive.readRoundFile(2, 'result.json'), null);
  } finally {
    h.cleanup();
  }
});
