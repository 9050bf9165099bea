// Runs one documented shell command as a real process (bash -c, its own process group): to completion with
// a time limit, or until its output shows it started (then Ctrl-C, and a kill if it does not stop).
import { spawn } from 'node:child_process';

export interface Outcome { ok: boolean; output: string; why?: string }

/** "20s", "2m", "1500ms" to milliseconds. */
export function durationMs(text: string | undefined, fallbackMs: number): number {
  if (!text) return fallbackMs;
  const m = /^(\d+)(ms|s|m)$/.exec(text);
  if (!m) throw new Error(`timeout="${text}" must be like 1500ms, 20s or 2m`);
  return Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1000 : 60_000);
}

// Process groups still running: killed if the test process itself is ended (a timeout's SIGTERM, Ctrl-C),
// since a detached group (a server a documented command started) would outlive it.
const live = new Set<number>();
const killAll = () => {
  for (const pid of live) killGroup(pid, 'SIGKILL');
};
process.once('exit', killAll);
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.once(sig, () => {
    killAll();
    process.exit(130);
  });
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/**
 * mode "run": waits for the exit; ok when the status is `exit` and the output matches `expect` (if given).
 * mode "starts": ok as soon as the output matches `expect`; the process group is then interrupted.
 */
export function runShell(command: string, o: { cwd: string; env: NodeJS.ProcessEnv; mode: 'run' | 'starts'; timeoutMs: number; expect?: RegExp; exit?: number }): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', command], { cwd: o.cwd, env: o.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid !== undefined) live.add(child.pid);
    let output = '';
    let verdict: Outcome | null = null;
    let killTimer: NodeJS.Timeout | undefined;
    const finish = (v: Outcome) => {
      if (verdict) return;
      verdict = v;
      if (child.exitCode === null && child.signalCode === null) {
        killGroup(child.pid, 'SIGINT');
        // A process that ignores Ctrl-C is killed; exit is awaited either way, so nothing outlives the test.
        killTimer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), 15_000);
      }
    };
    const limit = setTimeout(() => finish({ ok: false, output, why: `${o.mode === 'starts' ? 'did not show it started' : 'did not finish'} within ${o.timeoutMs / 1000} s` }), o.timeoutMs);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (o.mode === 'starts' && o.expect?.test(output)) finish({ ok: true, output });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code, signal) => {
      clearTimeout(limit);
      clearTimeout(killTimer);
      // Anything left in the group (a server the command started) goes with it.
      killGroup(child.pid, 'SIGKILL');
      if (child.pid !== undefined) live.delete(child.pid);
      if (!verdict) {
        if (o.mode === 'starts') verdict = { ok: false, output, why: `exited (${code ?? signal}) before its output matched ${o.expect}` };
        else if (code !== (o.exit ?? 0)) verdict = { ok: false, output, why: `exit status ${code ?? signal}, expected ${o.exit ?? 0}` };
        else if (o.expect && !o.expect.test(output)) verdict = { ok: false, output, why: `output does not match ${o.expect}` };
        else verdict = { ok: true, output };
      }
      resolve(verdict);
    });
  });
}
