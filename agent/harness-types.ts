// The harness contract's types, for harness authors: a harness file writes
// `import type { HarnessDefinition } from '<path>/agent/harness-types';` (or `.../harness-contract`, which
// re-exports these). Pure types with no imports beyond agent/environment.ts, so the validator can
// type-check a candidate against them quickly. The schemas that check values live in harness-contract.ts.

import type { JsonObject, JsonValue, ToolSpec } from './environment';

export type { JsonObject, JsonValue, ToolSpec } from './environment';

export type HookName = 'setup' | 'formatObservation' | 'parseAction' | 'feedback' | 'shouldStop';

/** A chat message as hooks read and write it (same shape as model/tokenizer.ts `ChatMessage`). */
export interface HarnessMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

/** The visible part of a task: hidden reference data is never in here. */
export interface TaskView {
  id: string;
  question: string;
  view: JsonObject;
}

/** An action the model took, as the (default or harness) parser reads it from one generated turn. */
export type ParsedAction =
  | { kind: 'tool'; tool: string; input: string }
  | { kind: 'answer'; answer: string }
  | { kind: 'none'; reason: string };

/** What happened after an action; `feedback` turns it into the next message(s). */
export type TurnEvent =
  | { kind: 'tool'; tool: string; input: string; params: Record<string, number>; ok: boolean; text: string; data: JsonValue }
  | { kind: 'format-error'; reason: string; formatErrorsLeft: number }
  | { kind: 'illegal'; answer: string; text: string; data: JsonValue; illegalActionsLeft: number }
  | { kind: 'continue'; answer: string; text: string; data: JsonValue };

export interface SetupInput {
  task: TaskView;
  observation: JsonObject;
  tools: ToolSpec[];
}
export interface SetupOutput {
  state: JsonValue;
}

export interface FormatObservationInput extends SetupInput {
  state: JsonValue;
}
export interface FormatObservationOutput {
  state: JsonValue;
  /** The first user message's text. */
  text: string;
}

export interface ParseActionInput {
  task: TaskView;
  state: JsonValue;
  turn: number;
  /** Exactly the text the model generated this turn. */
  text: string;
  tools: ToolSpec[];
  observation: JsonObject;
}
export interface ParseActionOutput {
  state: JsonValue;
  action: ParsedAction;
}

export interface FeedbackInput {
  task: TaskView;
  state: JsonValue;
  /** The turn that just ended (0-based); the next model call is turn + 1. */
  turn: number;
  event: TurnEvent;
  /** The conversation so far, ending with the model's message of this turn. */
  messages: HarnessMessage[];
  tools: ToolSpec[];
  observation: JsonObject;
}
export interface FeedbackOutput {
  state: JsonValue;
  /** Messages appended to the conversation (typically one `tool` or `user` message). */
  append?: HarnessMessage[];
  /** Replaces the whole conversation instead (context rewriting); `append` is then ignored. */
  replace?: HarnessMessage[];
}

export interface ShouldStopInput {
  task: TaskView;
  state: JsonValue;
  /** The next model call's turn number. */
  turn: number;
  messages: HarnessMessage[];
  observation: JsonObject;
}
export interface ShouldStopOutput {
  stop: boolean;
  reason?: string;
}

/** The hooks a harness may define; every one is optional (agent/harness-defaults.ts has the defaults). */
export interface HarnessHooks {
  setup?(input: SetupInput): SetupOutput;
  formatObservation?(input: FormatObservationInput): FormatObservationOutput;
  parseAction?(input: ParseActionInput): ParseActionOutput;
  feedback?(input: FeedbackInput): FeedbackOutput;
  shouldStop?(input: ShouldStopInput): ShouldStopOutput;
}

/** Answer spans besides `<answer>...</answer>` that a harness may accept (the loop extracts them, see
 * agent/provenance.ts): the last balanced `\boxed{...}`, or the single token matching the environment's
 * answer pattern (a UCI move, a number). */
export type AnswerForm = 'boxed' | 'token';

/** The data part of a harness: prompts, limits, budgets and tool parameters. */
export interface HarnessConfig {
  /** Short identifier for archives and traces. */
  name: string;
  /** System message; '' sends none. */
  systemPrompt: string;
  /** First user message; `{question}`, `{tools}` and `{<view key>}` are filled by the default formatter. */
  userTemplate: string;
  /** Model calls per episode, 1..32. */
  maxTurns: number;
  /** Retries after a format error / an illegal action; one more ends the episode. 0..10 each. */
  retryBudgets: { formatErrors: number; illegalActions: number };
  /** Per tool, values for the tool's declared parameters (e.g. `{ search: { topK: 3, docChars: 400 } }`). */
  toolParams: Record<string, Record<string, number>>;
  /** Answer spans accepted when the turn has no `<answer>` tag (default: none). Listed here, statically. */
  answerForms?: AnswerForm[];
}

/** A harness module's default export. */
export interface HarnessDefinition extends HarnessConfig {
  hooks: HarnessHooks;
}

/** What the system knows about a loaded harness without calling it: its data and which hooks exist. */
export interface HarnessManifest {
  /** Content hash of the harness source (sha256 hex): identifies it in traces and pools. */
  harnessId: string;
  config: HarnessConfig;
  hooks: HookName[];
}

/** One problem found in a harness file, with where (if known) and what to fix. */
export interface HarnessViolation {
  /** e.g. "import", "syntax", "config.maxTurns", "hooks.feedback", "load". */
  where: string;
  message: string;
  line?: number;
  column?: number;
}
