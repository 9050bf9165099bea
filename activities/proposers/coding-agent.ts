// The coding-agent proposer: runs a configured CLI (a Claude Code / Codex style agent) with its working
// directory in the workspace (a copy of the archive plus SKILL.md and TASK.md), under a timeout, with
// heartbeats while it runs. It writes candidate files into the slots and a pending_eval.json; the caller
// takes only those. Tokens and cost are read from the tool's report on stdout when it gives one.
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { skillText, taskText } from './skill';
import { WORKSPACE, type Proposer, type ProposerContext, type ProposerRun } from './types';

export interface CodingAgentConfig {
  /** argv; `{task}`, `{skill}`, `{prompt}` and `{count}` are replaced. Without `{prompt}`/`{task}` the prompt goes to stdin. */
  command: string[];
  timeoutMs: number;
}

const OUTPUT_CAP = 1 << 20;
const LOG_TAIL = 16_384;
const KILL_GRACE_MS = 2_000;

/** Tokens and cost from a CLI's JSON report (Claude Code's `--output-format json`, or `{tokens, usd}`). */
export function parseUsage(stdout: string): { tokens: number | null; usd: number | null } {
  let tokens: number | null = null;
  let usd: number | null = null;
  const candidates = [stdout.trim(), ...stdout.split('\n').map((l) => l.trim())].filter((l) => l.startsWith('{') && l.endsWith('}'));
  for (const text of candidates) {
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(text) as Record<string, unknown>;
    } catch {
      continue;
    }
    const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
    const cost = num(o.total_cost_usd) ?? num(o.cost_usd) ?? num(o.usd);
    if (cost !== null) usd = cost;
    const usage = (o.usage && typeof o.usage === 'object' ? o.usage : {}) as Record<string, unknown>;
    const parts = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'].map((k) => num(usage[k]));
    const fromUsage = parts.some((p) => p !== null) ? parts.reduce<number>((a, p) => a + (p ?? 0), 0) : null;
    const t = num(o.tokens) ?? num(usage.total_tokens) ?? fromUsage;
    if (t !== null) tokens = t;
  }
  return { tokens, usd };
}

export function createCodingAgentProposer(config: CodingAgentConfig, env: NodeJS.ProcessEnv): Proposer {
  return {
    kind: 'coding-agent',
    async propose(ctx: ProposerContext): Promise<ProposerRun> {
      const skill = skillText({ promptOnly: ctx.promptOnly, fencedOutput: false });
      const task = taskText({ round: ctx.round, count: ctx.count, accepted: ctx.accepted, domain: ctx.domain, tools: ctx.tools, answerKind: ctx.answerKind, promptOnly: ctx.promptOnly });
      await fs.writeFile(path.join(ctx.workspace, WORKSPACE.skill), skill);
      await fs.writeFile(path.join(ctx.workspace, WORKSPACE.task), task);
      await fs.mkdir(path.join(ctx.workspace, WORKSPACE.slotsDir), { recursive: true });
      await fs.mkdir(path.join(ctx.workspace, WORKSPACE.notesDir), { recursive: true });
      const prompt = `${task}\n${skill}`;
      const fill = (a: string) => a.replaceAll('{task}', WORKSPACE.task).replaceAll('{skill}', WORKSPACE.skill).replaceAll('{prompt}', prompt).replaceAll('{count}', String(ctx.count));
      const argv = config.command.map(fill);
      const viaStdin = !config.command.some((a) => a.includes('{prompt}') || a.includes('{task}'));
      const run = await runCommand(argv, {
        cwd: ctx.workspace, timeoutMs: config.timeoutMs, stdin: viaStdin ? prompt : null, heartbeat: ctx.heartbeat, heartbeatMs: ctx.heartbeatMs, signal: ctx.signal,
        env: { ...env, WHALE_TASK_FILE: WORKSPACE.task, WHALE_SKILL_FILE: WORKSPACE.skill, WHALE_CANDIDATES: String(ctx.count), WHALE_ROUND: String(ctx.round) },
      });
      const usage = parseUsage(run.stdout);
      const log = [
        `$ ${config.command.join(' ')}`, `exit: ${run.exit}; wall ${run.wallMs} ms${run.timedOut ? '; TIMED OUT' : ''}`,
        '--- stdout (tail) ---', run.stdout.slice(-LOG_TAIL), '--- stderr (tail) ---', run.stderr.slice(-LOG_TAIL),
      ].join('\n');
      let failure: string | null = null;
      if (run.timedOut) failure = `coding agent timed out after ${config.timeoutMs} ms`;
      else if (run.spawnError) failure = `coding agent could not start: ${run.spawnError}`;
      else if (run.exit !== 0) failure = `coding agent exited with ${run.exit}: ${run.stderr.trim().split('\n').slice(-1)[0] ?? ''}`;
      return { tokens: usage.tokens, usd: usage.usd, log, failure };
    },
  };
}

interface CommandResult {
  exit: number | string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  spawnError: string | null;
  wallMs: number;
}

/** Runs argv in its own process group; on timeout or cancellation the whole group is killed. */
export function runCommand(argv: string[], o: { cwd: string; timeoutMs: number; stdin: string | null; env: NodeJS.ProcessEnv; heartbeat(d: unknown): void; heartbeatMs: number; signal: AbortSignal }): Promise<CommandResult> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { cwd: o.cwd, env: o.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let spawnError: string | null = null;
    const killGroup = (sig: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, sig);
      } catch {
        // already gone
      }
    };
    const stop = () => {
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS).unref();
    };
    const timer = setTimeout(() => ((timedOut = true), stop()), o.timeoutMs);
    const beat = setInterval(() => o.heartbeat({ proposer: 'coding-agent', elapsedMs: Date.now() - t0 }), o.heartbeatMs);
    const onAbort = () => stop();
    o.signal.addEventListener('abort', onAbort);
    child.stdout.on('data', (d: Buffer) => (stdout = (stdout + d.toString('utf8')).slice(-OUTPUT_CAP)));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-OUTPUT_CAP)));
    child.stdin.on('error', () => undefined);
    child.on('error', (err) => (spawnError = err.message));
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      clearInterval(beat);
      o.signal.removeEventListener('abort', onAbort);
      killGroup('SIGKILL'); // leftovers the agent started in its group
      resolve({ exit: code ?? sig, stdout, stderr, timedOut, spawnError, wallMs: Date.now() - t0 });
    });
    child.stdin.end(o.stdin ?? '');
  });
}
