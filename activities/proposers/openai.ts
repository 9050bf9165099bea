// The OpenAI-compatible proposer: one chat completion through the official `openai` client (timeouts, retries
// honouring Retry-After, so a rate limit delays a round instead of losing it) given a digest of the archive;
// the reply's fenced blocks (```harness c<i> ... ``` and ```json pending_eval ... ```) become the slot files.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { HarnessArchive } from '../archive';
import { skillText, taskText } from './skill';
import { sampleFailedLines, traceStats } from './trace-stats';
import { WORKSPACE, slotFile, type PendingEvalEntry, type Proposer, type ProposerContext, type ProposerRun } from './types';

export interface OpenAiProposerConfig {
  baseUrl: string;
  model: string;
  apiKeyEnv: string;
  /** Time limit of one HTTP attempt; a retried request gets it again. */
  timeoutMs: number;
  /** Retries after the first attempt (429, 5xx, dropped connections); absent: DEFAULT_MAX_RETRIES. */
  maxRetries?: number;
}

const DIGEST_CAP = 60_000;

/** A compact view of the archive for a model without file access: scores, the best sources, failed traces. */
export async function archiveDigest(archive: HarnessArchive, accepted: string): Promise<string> {
  const all = await archive.readCandidates();
  const lines: string[] = ['## Candidates (name | status | success | mean turns | parent | axis | changes)'];
  for (const c of all) {
    const status = c.validation && !c.validation.valid ? `invalid: ${c.validation.reason ?? ''}`.slice(0, 200) : c.score ? 'evaluated' : 'pending';
    lines.push(`${c.name} | ${status} | ${c.score?.successRate ?? '-'} | ${c.score?.meanTurns ?? '-'} | ${c.meta?.parent ?? '-'} | ${c.meta?.axis ?? '-'} | ${c.meta?.changes ?? ''}`);
  }
  const best = all.filter((c) => c.score && c.source).sort((a, b) => (b.score?.successRate ?? 0) - (a.score?.successRate ?? 0)).slice(0, 2).map((c) => c.name);
  for (const name of [accepted, ...best.filter((n) => n !== accepted)]) {
    const c = all.find((x) => x.name === name);
    if (!c?.source) continue;
    const jsonl = await archive.readTrajectoriesJsonl(name);
    const stats = traceStats(jsonl);
    lines.push('', `## ${name}${name === accepted ? ' (accepted)' : ''}: harness.ts`, '```ts', c.source, '```');
    lines.push(`Failure categories over ${stats.episodes} episodes: ${JSON.stringify(stats.failures)}; failed without a tool call: ${stats.failedWithoutTool}; tool errors: ${stats.toolErrors}`);
    if (name === accepted) {
      lines.push('', `## Failed trajectories of ${name} (messages, stop reason)`);
      for (const line of sampleFailedLines(jsonl, 6)) {
        const t = JSON.parse(line) as { stopReason?: string; stopDetail?: string; messages?: Array<{ role: string; content: string }> };
        lines.push(`- stop: ${t.stopReason} ${t.stopDetail ?? ''}`, ...(t.messages ?? []).map((m) => `  [${m.role}] ${m.content.slice(0, 400).replace(/\n/g, '\n    ')}`));
      }
    }
  }
  const text = lines.join('\n');
  return text.length > DIGEST_CAP ? text.slice(0, DIGEST_CAP) + '\n[digest cut]' : text;
}

/** The candidate files and pending_eval entries in a completion's fenced blocks. */
export function parseFencedCandidates(content: string): { files: Map<string, string>; pending: PendingEvalEntry[] } {
  const files = new Map<string, string>();
  let pending: PendingEvalEntry[] = [];
  const re = /```([^\n`]*)\n([\s\S]*?)```/g;
  for (let m = re.exec(content); m !== null; m = re.exec(content)) {
    const info = m[1].trim().split(/\s+/);
    const slot = /^(?:harness|ts|typescript)$/.test(info[0] ?? '') ? /^c(\d+)$/.exec(info[1] ?? '') : null;
    if (slot) files.set(`c${slot[1]}`, m[2]);
    else if (info[0] === 'json' && info[1] === 'pending_eval') {
      try {
        const parsed = JSON.parse(m[2]) as { candidates?: PendingEvalEntry[] };
        if (Array.isArray(parsed.candidates)) pending = parsed.candidates;
      } catch {
        // an unparsable pending_eval leaves the files without stated hypotheses
      }
    }
  }
  return { files, pending };
}

/** Retries when the run config gives none: a rate-limited (429) or overloaded (5xx) endpoint gets this many more tries. */
export const DEFAULT_MAX_RETRIES = 4;

/** The client's own log lines (request outcomes, "retrying" with the wait the server asked for) for the round log. */
function captureLogger(lines: string[]) {
  const keep = (level: string) => (message: string) => lines.push(`[openai ${level}] ${message}`);
  return { debug: () => {}, info: keep('info'), warn: keep('warn'), error: keep('error') };
}

export function createOpenAiProposer(config: OpenAiProposerConfig, env: NodeJS.ProcessEnv): Proposer {
  const maxRetries = config.maxRetries ?? DEFAULT_MAX_RETRIES;
  return {
    kind: 'openai',
    async propose(ctx: ProposerContext): Promise<ProposerRun> {
      const archive = new HarnessArchive(ctx.workspace, 'workspace');
      const system = skillText({ promptOnly: ctx.promptOnly, fencedOutput: true });
      const user = `${taskText({ round: ctx.round, count: ctx.count, accepted: ctx.accepted, domain: ctx.domain, tools: ctx.tools, answerKind: ctx.answerKind, promptOnly: ctx.promptOnly })}\n${await archiveDigest(archive, ctx.accepted)}`;
      const key = env[config.apiKeyEnv];
      const log = [
        `POST ${config.baseUrl.replace(/\/+$/, '')}/chat/completions model=${config.model} (key from ${config.apiKeyEnv}: ${key ? 'set' : 'not set'}; ${config.timeoutMs} ms per attempt, up to ${maxRetries} retries)`,
        `user message: ${user.length} chars`,
      ];
      let attempts = 0;
      // The official client retries 408/409/429/5xx and dropped connections, waiting what Retry-After
      // (or retry-after-ms) asks, else exponential backoff; everything comes from the run config and the
      // worker's environment, never from OPENAI_* variables the client would otherwise read on its own.
      const client = new OpenAI({
        baseURL: config.baseUrl,
        // A local OpenAI-compatible server may need no key: the client insists on one, so the header is dropped instead.
        apiKey: key || 'no-key',
        ...(key ? {} : { defaultHeaders: { Authorization: null } }),
        organization: null, project: null, webhookSecret: null,
        timeout: config.timeoutMs,
        maxRetries,
        logger: captureLogger(log), logLevel: 'info',
        fetch: (url, init) => {
          attempts += 1;
          return fetch(url, init);
        },
      });
      const beat = setInterval(() => ctx.heartbeat({ proposer: 'openai', attempts }), ctx.heartbeatMs);
      try {
        const body = await client.chat.completions.create(
          { model: config.model, messages: [{ role: 'system', content: system }, { role: 'user', content: user }] },
          { signal: ctx.signal },
        );
        const content = body.choices?.[0]?.message?.content ?? '';
        const { files, pending } = parseFencedCandidates(content);
        await fs.mkdir(path.join(ctx.workspace, WORKSPACE.slotsDir), { recursive: true });
        for (const [slot, source] of files) {
          const i = Number(slot.slice(1));
          if (i >= 1 && i <= ctx.count) await fs.writeFile(path.join(ctx.workspace, slotFile(i)), source);
        }
        await fs.writeFile(path.join(ctx.workspace, WORKSPACE.pendingEval), JSON.stringify({ candidates: pending }, null, 2));
        const u = body.usage;
        const tokens = u ? (u.total_tokens ?? (u.prompt_tokens ?? 0) + (u.completion_tokens ?? 0)) : null;
        return { tokens, usd: null, log: [...log, `completion after ${attempts} attempt(s): ${content.length} chars, ${files.size} fenced candidate(s)`, content.slice(0, 16_384)].join('\n'), failure: null };
      } catch (err) {
        const what = describeFailure(err, config.timeoutMs);
        return { tokens: null, usd: null, log: [...log, `error after ${attempts} attempt(s): ${what.detail}`].join('\n'), failure: `chat completion failed: ${what.summary} (${attempts} attempt(s))` };
      } finally {
        clearInterval(beat);
      }
    },
  };
}

/** A failed round's one-line reason (kept in the archive and the workflow history) and the longer log text. */
function describeFailure(err: unknown, timeoutMs: number): { summary: string; detail: string } {
  if (err instanceof APIConnectionTimeoutError) return { summary: `timed out after ${timeoutMs} ms`, detail: `timed out after ${timeoutMs} ms` };
  if (err instanceof APIUserAbortError) return { summary: 'cancelled', detail: 'cancelled (the activity was cancelled)' };
  if (err instanceof APIError && err.status !== undefined) return { summary: `HTTP ${err.status}`, detail: `HTTP ${err.status}: ${String(err.message).slice(0, 2000)}` };
  const e = err as Error;
  return { summary: e.message, detail: e.stack ?? e.message };
}
