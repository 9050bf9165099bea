// The one interface every proposer implements (built-in search, coding-agent CLI, OpenAI-compatible
// model). A proposer gets a workspace: a private copy of the phase archive plus empty candidate slots. It
// writes at most `count` harness files into the slots and a pending_eval.json; the caller takes only those
// files (docs/harness-phase.md). Nothing a proposer does in its workspace can reach the archive itself.
import type { ToolSpec } from '../../agent/environment';

export interface ProposerContext {
  domain: string;
  seed: number;
  round: number;
  /** M: candidate slots, `proposals/c1.ts` .. `proposals/c<count>.ts`. */
  count: number;
  promptOnly: boolean;
  /** Archive name of the currently accepted harness (the parent to copy-then-edit by default). */
  accepted: string;
  /** Workspace root: a copy of the archive, the skill and task files, the slots. */
  workspace: string;
  /** The environment's tools (names, descriptions, parameter ranges) and what a submission is. */
  tools: readonly ToolSpec[];
  answerKind: 'answer' | 'move';
  /** Visible views and initial observations of a few D_harness tasks (never D_test). */
  sampleViews: Array<{ question: string; view: Record<string, unknown>; observation: Record<string, unknown> }>;
  /** Called every `heartbeatMs` while a long proposer call runs (activity heartbeat). */
  heartbeat(details: unknown): void;
  heartbeatMs: number;
  /** Aborted when the activity is cancelled. */
  signal: AbortSignal;
}

/** What a proposer reports besides the files it wrote. */
export interface ProposerRun {
  /** Proposer tokens and money when the tool reports them (null: unknown). */
  tokens: number | null;
  usd: number | null;
  /** A short log for the round folder (prompt, stdout tail, notes). */
  log: string;
  /** Set when the proposer failed as a whole (timeout, non-zero exit, HTTP error). */
  failure: string | null;
}

export interface Proposer {
  readonly kind: string;
  propose(ctx: ProposerContext): Promise<ProposerRun>;
}

/** pending_eval.json as proposers write it. */
export interface PendingEvalEntry {
  /** Slot file the entry describes, e.g. "proposals/c1.ts" (or just "c1"). */
  file?: string;
  name?: string;
  /** Archive name of the parent it was copied from. */
  parent?: string;
  hypothesis?: string;
  changes?: string;
  axis?: string;
  components?: unknown;
}

export const WORKSPACE = {
  slotsDir: 'proposals',
  pendingEval: 'pending_eval.json',
  skill: 'SKILL.md',
  task: 'TASK.md',
  notesDir: 'notes',
} as const;

export function slotFile(i: number): string {
  return `${WORKSPACE.slotsDir}/c${i}.ts`;
}
