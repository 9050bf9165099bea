// Deterministic training at 2 threads, with real processes: an uninterrupted run and a run whose process is
// SIGKILLed mid-step and resumed from its last checkpoint write the same checkpoint bytes step by step, over
// rows of 512 and 1024 tokens, short rows and an accumulated minibatch. A 1-thread run of the same schedule
// differs (proof that the 2-thread split ran, not a silent fallback to one thread).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const CHILD = path.join(__dirname, 'fixtures', 'deterministic-train-child.ts');
const STEPS = 4;

interface ChildRun { hashes: Map<number, string>; signal: NodeJS.Signals | null; code: number | null }

/** Runs the child from `from` to `to`; with `killAtBegin`, SIGKILLs it as soon as it starts that step. */
function train(dir: string, from: number, to: number, threads: number, killAtBegin?: number): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, dir, String(from), String(to), String(threads)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const hashes = new Map<number, string>();
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const lines = out.split('\n');
      out = lines.pop() ?? '';
      for (const line of lines) {
        const [tag, n, sha] = line.split(' ');
        if (tag === 'STEP') hashes.set(Number(n), sha);
        if (tag === 'BEGIN' && Number(n) === killAtBegin) child.kill('SIGKILL');
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (killAtBegin === undefined && code !== 0) reject(new Error(`training child failed (code ${code}): ${err}`));
      else resolve({ hashes, signal, code });
    });
  });
}

describe('deterministic training at 2 threads', () => {
  it('gives the same checkpoint hash step by step when the training process is killed mid-step and resumed', async (t) => {
    const root = mkdtempSync(path.join(tmpdir(), 'whale-det-'));
    try {
      const [cleanDir, killedDir, oneDir] = ['clean', 'killed', 'one-thread'].map((d) => path.join(root, d));
      for (const d of [cleanDir, killedDir, oneDir]) mkdirSync(d);
      const clean = await train(cleanDir, 0, STEPS, 2);
      assert.deepEqual([...clean.hashes.keys()], [1, 2, 3, 4]);

      const killed = await train(killedDir, 0, STEPS, 2, 3);
      assert.equal(killed.signal, 'SIGKILL', 'the child must die by SIGKILL during step 3');
      assert.deepEqual([...killed.hashes.keys()], [1, 2], 'killed during step 3: steps 1 and 2 done, step 3 not');
      assert.ok(!existsSync(path.join(killedDir, 'step-3.ckpt')));
      const resumed = await train(killedDir, 2, STEPS, 2);
      const joined = new Map([...killed.hashes, ...resumed.hashes]);
      for (let s = 1; s <= STEPS; s++) assert.equal(joined.get(s), clean.hashes.get(s), `step ${s}: the interrupted run's checkpoint differs`);

      const one = await train(oneDir, 0, 1, 1);
      assert.notEqual(one.hashes.get(1), clean.hashes.get(1), 'a 1-thread run gave the 2-thread bits: the rows were not split');
      t.diagnostic(`2 threads, clean = killed at step 3 and resumed: ${[...clean.hashes.values()].map((h) => h.slice(0, 12)).join(' ')}; 1 thread step 1: ${one.hashes.get(1)?.slice(0, 12)}`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
