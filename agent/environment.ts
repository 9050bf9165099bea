// The domain environment the agent loop drives: tasks, plain-JSON episode state, the tools a domain
// offers, tool execution, answer/move submission, the answer normaliser used by the provenance check,
// and the binary verifier. Domains (domains/*) implement `DomainEnvironment`; the loop (agent/) is the
// only caller. Harness code never receives an environment object, a task's hidden data or the verifier:
// it runs in a sandbox and sees only the copies of visible data the loop hands it.

/** JSON values: the only data that crosses into a harness, a trajectory or a workflow payload. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * One task instance. `question` and `view` are visible (the harness formats them for the model);
 * `hidden` is reference data only the environment's own methods and the verifier read.
 */
export interface EnvTask<Hidden = unknown> {
  /** Stable task id, unique within a domain (e.g. "math/syn/00042"). Also the prompt id for seeding. */
  id: string;
  /** The underlying item (entity, problem, position) the data splits are disjoint by. */
  itemId: string;
  /** The visible question / problem / position description. */
  question: string;
  /** Further visible, structured facts the harness may format (e.g. FEN, side to move). Never the answer. */
  view: JsonObject;
  /** Hidden reference data (answer, solution line). Never sent to the harness, the model or a trace. */
  hidden: Hidden;
}

/** An integer parameter of a tool that a harness may set (retrieval top-k, document length, ...). */
export interface ToolParamSpec {
  description: string;
  kind: 'int';
  min: number;
  max: number;
  default: number;
}

/** A tool the environment offers. The model calls it as `<name>input</name>` (see agent/actions.ts). */
export interface ToolSpec {
  /** Tag name: lowercase letters, digits and '_', starting with a letter; never "answer". */
  name: string;
  /** One line for prompts and docs: what the tool does and what its input is. */
  description: string;
  /** Parameters a harness may set in `toolParams[name]`; the loop clamps nothing: out of range is invalid. */
  params: Record<string, ToolParamSpec>;
  /** A tool that computes (a calculator): its result counts as harness-written unless its input is in the
   * model's turn or the task's question (the loop's no-injection check, agent/provenance.ts). */
  computes?: boolean;
}

/** A tool call as the loop executes it: the model's input text plus the harness's parameter values. */
export interface ToolCall {
  tool: string;
  /** The argument text (query, expression). A harness may rewrite it (query rewriting is allowed). */
  input: string;
  /** Every parameter of the tool's spec, harness value or spec default. */
  params: Record<string, number>;
}

export interface ToolResult<State extends JsonValue = JsonValue> {
  /** The episode state after the call (tools may record what was retrieved, computed, ...). */
  state: State;
  /** false for a failed call the model caused (bad expression, unknown id): still a normal observation. */
  ok: boolean;
  /** Plain-text rendering of the output; a harness may re-format it from `data`. */
  text: string;
  /** Structured output (e.g. passages with titles) for harness formatting. Visible data only. */
  data: JsonValue;
}

/**
 * What happened when an answer or move was submitted:
 * - `final`: the episode is over (QA answer given; chess: a legal wrong move, or the line is complete);
 * - `continue`: accepted and the episode goes on (chess: a correct move; the environment has already
 *   played the opponent's reply into `state`, and `text` says what it played);
 * - `illegal`: not a legal action in this state; nothing changed; the harness's illegal-action retry
 *   budget decides whether the model gets another try.
 */
export type SubmitOutcome = 'final' | 'continue' | 'illegal';

export interface SubmitResult<State extends JsonValue = JsonValue> {
  state: State;
  outcome: SubmitOutcome;
  /** Visible feedback (e.g. "opponent played e7e5", "e2e5 is not legal"). Never reveals the reference. */
  text: string;
  /** Visible structured data for harness formatting (e.g. the new legal-move list). */
  data: JsonValue;
}

/**
 * A domain environment. All methods are deterministic functions of their arguments (the loop replays and
 * seeds episodes; randomness would break reproducibility). State is plain JSON: the loop copies it into
 * trajectories and hands `observe(...)` (never `state` itself) to the harness.
 */
export interface DomainEnvironment<Hidden = unknown, State extends JsonValue = JsonValue> {
  /** Domain name, e.g. "searchqa", "math", "chess". */
  readonly domain: string;
  /** Tools the model may call. May be empty (then only `<answer>` is possible). */
  readonly tools: readonly ToolSpec[];
  /** What a submission is, for prompts and docs: an answer text or a move. */
  readonly answerKind: 'answer' | 'move';

  /** The episode's initial state. Must not copy `task.hidden` into the state. */
  initialState(task: EnvTask<Hidden>): State;

  /**
   * The visible view of a state for the harness (question progress, legal moves, tool history, ...).
   * This is all a harness ever learns about the state; it must not contain hidden reference data.
   */
  observe(task: EnvTask<Hidden>, state: State): JsonObject;

  /** Runs one tool call. Async allowed (e.g. a retrieval index); throw only for system faults. */
  executeTool(task: EnvTask<Hidden>, state: State, call: ToolCall): ToolResult<State> | Promise<ToolResult<State>>;

  /** Submits an answer or a move (already normalised by `normalizeAnswer`). */
  submit(task: EnvTask<Hidden>, state: State, answer: string): SubmitResult<State>;

  /**
   * The domain's answer normaliser (e.g. lowercase, collapse whitespace, strip punctuation; UCI lowercase).
   * The loop's provenance checks compare answers with it: normalize(answer) must be non-empty and equal
   * normalize(the model's answer span) (agent/provenance.ts); otherwise the answer is a contract violation.
   */
  normalizeAnswer(text: string): string;

  /** The shape of a bare answer (a number, a UCI move), for harnesses that list the `token` answer form. */
  readonly answerPattern?: RegExp;

  /**
   * The no-grading check's alternative to the model's (normalised) answer in this state: the reference if
   * `answer` is wrong, a wrong value of the same shape if it is right. Without it the loop shifts the
   * answer's digits and letters, which catches a harness that tells two answers apart but not a grader.
   */
  alternativeAnswer?(task: EnvTask<Hidden>, state: State, answer: string): string;

  /**
   * The verifier R(task, final state) in {0, 1}. Called by the loop once, at the end of an episode,
   * never exposed to harness code. Reads `task.hidden` and the answers/moves recorded in `state`.
   */
  verify(task: EnvTask<Hidden>, finalState: State): 0 | 1;
}
