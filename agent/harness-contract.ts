// The harness contract: everything a harness may change (prompts, turn limit, retry budgets, tool
// parameters, five hooks). The types live in harness-types.ts and are re-exported here; this module adds
// the zod schemas the system checks every harness value with, and the config / tool-parameter checks.
// Hooks are synchronous pure functions of plain JSON data; the host awaits the model, never a hook.
// Docs for authors: docs/writing-a-harness.md.

import { z } from 'zod';
import type { JsonValue, ToolSpec } from './environment';
import type { HarnessConfig, HarnessViolation, HookName } from './harness-types';

export type * from './harness-types';

/** Limits of the contract (also quoted in docs/writing-a-harness.md). */
export const HARNESS_LIMITS = {
  maxTurns: 32,
  maxRetryBudget: 10,
  maxPromptChars: 16_384,
  maxMessageChars: 65_536,
  maxMessages: 64,
  maxStateJsonChars: 65_536,
  /** Total characters of a conversation a hook may produce: bounds what crosses back into the worker. */
  maxConversationChars: 262_144,
  /** Nesting depth of any hook output: deep enough for any real state, shallow enough for every parser. */
  maxJsonDepth: 64,
} as const;

/** True when a JSON-like value nests deeper than `limit` (iterative: safe on hostile depths). */
export function exceedsJsonDepth(value: unknown, limit: number): boolean {
  const stack: Array<{ v: unknown; d: number }> = [{ v: value, d: 1 }];
  while (stack.length > 0) {
    const { v, d } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push({ v: child, d: d + 1 });
  }
  return false;
}

export const HOOK_NAMES: readonly HookName[] = ['setup', 'formatObservation', 'parseAction', 'feedback', 'shouldStop'];

// ---- zod schemas: every value a harness produces is checked with these before the loop uses it. ----

const jsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.null(), z.boolean(), z.number().finite(), z.string(), z.array(jsonValueSchema), z.record(z.string(), jsonValueSchema)]),
);
const jsonObjectSchema = z.record(z.string(), jsonValueSchema);

const stateSchema = jsonValueSchema.refine((v) => JSON.stringify(v).length <= HARNESS_LIMITS.maxStateJsonChars, {
  message: `state must serialise to at most ${HARNESS_LIMITS.maxStateJsonChars} JSON characters`,
});
const messageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().max(HARNESS_LIMITS.maxMessageChars),
});
const messagesSchema = z.array(messageSchema).max(HARNESS_LIMITS.maxMessages);

export const parsedActionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('tool'), tool: z.string().min(1), input: z.string().max(HARNESS_LIMITS.maxMessageChars) }),
  z.object({ kind: z.literal('answer'), answer: z.string().max(HARNESS_LIMITS.maxMessageChars) }),
  z.object({ kind: z.literal('none'), reason: z.string().max(2_000) }),
]);

export const hookOutputSchemas = {
  setup: z.object({ state: stateSchema }),
  formatObservation: z.object({ state: stateSchema, text: z.string().max(HARNESS_LIMITS.maxMessageChars) }),
  parseAction: z.object({ state: stateSchema, action: parsedActionSchema }),
  feedback: z.object({ state: stateSchema, append: messagesSchema.optional(), replace: messagesSchema.optional() }),
  shouldStop: z.object({ stop: z.boolean(), reason: z.string().max(2_000).optional() }),
} as const;

const budget = z.number().int().min(0).max(HARNESS_LIMITS.maxRetryBudget);
export const harnessConfigSchema = z.strictObject({
  name: z.string().min(1).max(200),
  systemPrompt: z.string().max(HARNESS_LIMITS.maxPromptChars),
  userTemplate: z.string().min(1).max(HARNESS_LIMITS.maxPromptChars),
  maxTurns: z.number().int().min(1).max(HARNESS_LIMITS.maxTurns),
  retryBudgets: z.strictObject({ formatErrors: budget, illegalActions: budget }),
  toolParams: z.record(z.string(), z.record(z.string(), z.number().finite())),
  answerForms: z.array(z.enum(['boxed', 'token'])).max(2).optional(),
});

export { jsonObjectSchema, jsonValueSchema, messagesSchema };

/** Turns zod issues into violations, one per issue, with the path in `where`. */
export function violationsFromZod(prefix: string, error: z.ZodError): HarnessViolation[] {
  return error.issues.map((issue) => ({
    where: [prefix, ...issue.path.map(String)].filter((s) => s !== '').join('.'),
    message: issue.message,
  }));
}

/** Checks the data part of a harness; returns every violation (empty = valid). */
export function checkHarnessConfig(value: unknown): HarnessViolation[] {
  const parsed = harnessConfigSchema.safeParse(value);
  return parsed.success ? [] : violationsFromZod('config', parsed.error);
}

/** Checks a harness's tool parameters against the environment's tools: unknown names, out-of-range values. */
export function checkToolParams(config: HarnessConfig, tools: readonly ToolSpec[]): HarnessViolation[] {
  const out: HarnessViolation[] = [];
  for (const [toolName, params] of Object.entries(config.toolParams)) {
    const spec = tools.find((t) => t.name === toolName);
    if (!spec) {
      out.push({ where: `config.toolParams.${toolName}`, message: `unknown tool "${toolName}"; the environment offers: ${tools.map((t) => t.name).join(', ') || '(none)'}` });
      continue;
    }
    for (const [param, value] of Object.entries(params)) {
      const p = spec.params[param];
      if (!p) out.push({ where: `config.toolParams.${toolName}.${param}`, message: `tool "${toolName}" has no parameter "${param}"; it has: ${Object.keys(spec.params).join(', ') || '(none)'}` });
      else if (!Number.isInteger(value) || value < p.min || value > p.max) {
        out.push({ where: `config.toolParams.${toolName}.${param}`, message: `must be an integer in [${p.min}, ${p.max}], got ${value}` });
      }
    }
  }
  return out;
}

/** Effective parameters for a tool: harness values over the spec's defaults. */
export function effectiveToolParams(config: HarnessConfig, tool: ToolSpec): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, spec] of Object.entries(tool.params)) out[name] = config.toolParams[tool.name]?.[name] ?? spec.default;
  return out;
}
