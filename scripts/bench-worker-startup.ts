// Orchestration worker start-up time: `node bin/whale.js worker --queue orchestration` from launch to its
// "polling" line, N times against one dev server (`whale dev --headless --no-workers` on a free port).
// Usage: node --import tsx scripts/bench-worker-startup.ts [--runs 5]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createServer } from 'node:net';

const ROOT = path.resolve(__dirname, '..');
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 5;
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a whole number >= 1, got ${process.argv[runsArg + 1]}`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Starts `node bin/whale.js <args>` and resolves once its output contains `marker` (ms since launch). */
function startUntil(args: string[], env: NodeJS.ProcessEnv, marker: string, timeoutMs: number): Promise<{ child: ChildProcess; ms: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['bin/whale.js', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no '${marker}' after ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes(marker)) {
        clearTimeout(timer);
        resolve({ child, ms: performance.now() - t0 });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before '${marker}':\n${out}`));
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGINT');
  await exited;
}

async function main(): Promise<void> {
  const port = await freePort();
  const work = mkdtempSync(path.join(tmpdir(), 'whale-startup-'));
  const env = {
    WHALE_TEMPORAL_ADDRESS: `127.0.0.1:${port}`, WHALE_DEV_PORT: String(port), WHALE_DEV_UI_PORT: String(await freePort()),
    WHALE_DEV_DATA_DIR: path.join(work, 'temporal'), WHALE_ARTIFACT_DIR: path.join(work, 'artifacts'),
  };
  const server = await startUntil(['dev', '--headless', '--no-workers'], env, 'press Ctrl-C', 180_000);
  try {
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const w = await startUntil(['worker', '--queue', 'orchestration'], env, 'orchestration worker polling', 180_000);
      times.push(w.ms);
      await stop(w.child);
      process.stdout.write(`run ${i + 1}: ${(w.ms / 1000).toFixed(2)} s\n`);
    }
    const sorted = [...times].sort((a, b) => a - b);
    process.stdout.write(`median of ${RUNS}: ${(sorted[Math.floor(RUNS / 2)] / 1000).toFixed(2)} s (min ${(sorted[0] / 1000).toFixed(2)}, max ${(sorted[RUNS - 1] / 1000).toFixed(2)})\n`);
  } finally {
    await stop(server.child);
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
