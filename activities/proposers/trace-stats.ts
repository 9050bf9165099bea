// Failure categories counted in a candidate's D_harness trajectories (the archive's trajectories.jsonl):
// what the built-in proposer steers by and what the API proposer's digest summarises. Reads lines loosely
// (a proposer must not crash on one odd line), keeping only the fields it counts.

export const FAILURE_CATEGORIES = [
  'wrong-answer', // answered, verifier said no
  'turn-limit',
  'format-errors', // episode ended on the format-error budget
  'illegal-actions',
  'contract-violation',
  'harness-failure',
  'context', // token budget or context full
  'stop-rule',
] as const;
export type FailureCategory = (typeof FAILURE_CATEGORIES)[number];

export interface TraceStats {
  episodes: number;
  successes: number;
  /** Episodes that ended in each failure category. */
  failures: Record<FailureCategory, number>;
  /** Failed episodes that never called a tool. */
  failedWithoutTool: number;
  /** Tool calls that returned ok: false, over all episodes. */
  toolErrors: number;
  /** Turns whose action could not be parsed (format errors, retried or not). */
  formatErrorTurns: number;
  meanTurns: number;
}

interface LooseTrajectory {
  reward?: number;
  stopReason?: string;
  turns?: Array<{ action?: { kind?: string }; tool?: { ok?: boolean } }>;
}

export function categoryOf(stopReason: string): FailureCategory {
  switch (stopReason) {
    case 'turn-limit': return 'turn-limit';
    case 'format-errors': return 'format-errors';
    case 'illegal-actions': return 'illegal-actions';
    case 'contract-violation': return 'contract-violation';
    case 'harness-failure': return 'harness-failure';
    case 'token-budget':
    case 'context-full': return 'context';
    case 'stop-rule': return 'stop-rule';
    default: return 'wrong-answer';
  }
}

export function emptyStats(): TraceStats {
  return {
    episodes: 0, successes: 0, failures: Object.fromEntries(FAILURE_CATEGORIES.map((c) => [c, 0])) as Record<FailureCategory, number>,
    failedWithoutTool: 0, toolErrors: 0, formatErrorTurns: 0, meanTurns: 0,
  };
}

export function traceStats(jsonl: string): TraceStats {
  const s = emptyStats();
  let turns = 0;
  for (const line of jsonl.split('\n')) {
    if (line.trim() === '') continue;
    let t: LooseTrajectory;
    try {
      t = JSON.parse(line) as LooseTrajectory;
    } catch {
      continue;
    }
    s.episodes += 1;
    const tt = Array.isArray(t.turns) ? t.turns : [];
    turns += tt.length;
    s.toolErrors += tt.filter((x) => x.tool && x.tool.ok === false).length;
    s.formatErrorTurns += tt.filter((x) => x.action?.kind === 'none').length;
    if (t.reward === 1) {
      s.successes += 1;
      continue;
    }
    s.failures[categoryOf(String(t.stopReason ?? ''))] += 1;
    if (!tt.some((x) => x.action?.kind === 'tool')) s.failedWithoutTool += 1;
  }
  s.meanTurns = s.episodes ? turns / s.episodes : 0;
  return s;
}

/** Failed episodes, at most `limit`, as raw JSONL lines (for a digest), spread over categories. */
export function sampleFailedLines(jsonl: string, limit: number): string[] {
  const byCat = new Map<string, string[]>();
  for (const line of jsonl.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const t = JSON.parse(line) as LooseTrajectory;
      if (t.reward === 1) continue;
      const c = categoryOf(String(t.stopReason ?? ''));
      byCat.set(c, [...(byCat.get(c) ?? []), line]);
    } catch {
      continue;
    }
  }
  const out: string[] = [];
  const lists = [...byCat.values()];
  for (let i = 0; out.length < limit && lists.some((l) => l.length > i); i++) for (const l of lists) if (l[i] && out.length < limit) out.push(l[i]);
  return out;
}
