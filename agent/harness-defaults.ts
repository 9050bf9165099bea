// Default behaviour of every hook a harness leaves out. Trusted code: it runs on the host (in the loop,
// or next to the isolate in a sandbox process), never inside the isolate.

import { parseActionTags } from './actions';
import type { JsonObject, ToolSpec } from './environment';
import type {
  FeedbackInput,
  FeedbackOutput,
  FormatObservationInput,
  FormatObservationOutput,
  HarnessConfig,
  ParseActionInput,
  ParseActionOutput,
  SetupInput,
  SetupOutput,
  ShouldStopInput,
  ShouldStopOutput,
  TaskView,
} from './harness-contract';

/** One line per tool: `<name>input</name>: description`. */
export function describeTools(tools: readonly ToolSpec[]): string {
  return tools.map((t) => `<${t.name}>...</${t.name}>: ${t.description}`).join('\n');
}

/**
 * Fills `{question}`, `{tools}` and `{key}` for each string/number/boolean field of the task's view and
 * the observation (observation wins). Unknown placeholders stay as written, so typos are visible in traces.
 */
export function fillUserTemplate(template: string, task: TaskView, observation: JsonObject, tools: readonly ToolSpec[]): string {
  const values: Record<string, string> = {};
  for (const source of [task.view, observation]) {
    for (const [k, v] of Object.entries(source)) {
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') values[k] = String(v);
    }
  }
  values.question = task.question;
  values.tools = describeTools(tools);
  return template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, key: string) => values[key] ?? whole);
}

export function defaultSetup(_input: SetupInput): SetupOutput {
  return { state: null };
}

export function defaultFormatObservation(config: HarnessConfig, input: FormatObservationInput): FormatObservationOutput {
  return { state: input.state, text: fillUserTemplate(config.userTemplate, input.task, input.observation, input.tools) };
}

export function defaultParseAction(input: ParseActionInput): ParseActionOutput {
  return { state: input.state, action: parseActionTags(input.text, input.tools) };
}

/** Tool output as a `tool` message; errors and illegal moves as a `user` message saying what went wrong. */
export function defaultFeedback(input: FeedbackInput): FeedbackOutput {
  const e = input.event;
  switch (e.kind) {
    case 'tool':
      return { state: input.state, append: [{ role: 'tool', content: e.text }] };
    case 'format-error':
      return { state: input.state, append: [{ role: 'user', content: `Format error: ${e.reason}.` }] };
    case 'illegal':
      return { state: input.state, append: [{ role: 'user', content: `Illegal: ${e.text}` }] };
    case 'continue':
      return { state: input.state, append: [{ role: 'tool', content: e.text }] };
  }
}

export function defaultShouldStop(_input: ShouldStopInput): ShouldStopOutput {
  return { stop: false };
}
