// Harness validation for the harness phase: the sandbox validator (compile, static rules, types, isolate
// load, contract, tool parameters), the prompt-only rule, and a smoke run of the hooks through the real
// sandbox on a few D_harness task views with scripted model texts (no model, so no rollouts are spent).
// Every failure of the candidate is an invalid row with its reason; nothing here throws for bad source.
import type { EnvTask, JsonObject, ToolSpec } from '../../agent/environment';
import { effectiveToolParams } from '../../agent/harness-contract';
import type { HarnessMessage, TaskView, TurnEvent } from '../../agent/harness-contract';
import type { PhaseCall, PhaseResult, StartPhaseOutput } from '../../agent/harness-runner';
import type { DomainInstance } from '../../domains/types';
import type { SandboxPool } from '../../harness-sandbox/pool';
import { validateHarnessSource } from '../../harness-sandbox/validate';
import type { CandidateValidation } from '../archive';
import { parseHarnessSource, withoutPromptStrings } from './harness-source';

export const SMOKE_TASKS = 3;

/** Which top-level parts differ besides the two prompt strings (empty: the prompt-only rule holds). */
export function promptOnlyDifferences(base: string, candidate: string): string[] {
  const a = withoutPromptStrings(base);
  const b = withoutPromptStrings(candidate);
  if (a === null) return ['the base harness has no default-exported object literal'];
  if (b === null) return ['the candidate has no default-exported object literal'];
  if (a === b) return [];
  const ia = parseHarnessSource(base);
  const ib = parseHarnessSource(candidate);
  const out: string[] = [];
  if (ia && ib) {
    const text = (i: typeof ia, k: string) => {
      const p = i.properties.get(k);
      return p ? i.sourceFile.text.slice(p.start, p.end).replace(/\s+/g, ' ') : '(absent)';
    };
    for (const k of new Set([...ia.properties.keys(), ...ib.properties.keys()])) {
      if (k !== 'systemPrompt' && k !== 'userTemplate' && text(ia, k) !== text(ib, k)) out.push(k);
    }
  }
  return out.length ? out : ['code outside the harness object'];
}

function fail(kind: string, reason: string, violations: CandidateValidation['violations'] = [], smoke = 'not run'): CandidateValidation {
  return { valid: false, failureKind: kind, reason, violations, smoke };
}

export async function validateCandidate(opts: { sandbox: SandboxPool; instance: DomainInstance; source: string; promptOnlyBase: string | null }): Promise<CandidateValidation> {
  const tools = opts.instance.environment.tools;
  const v = await validateHarnessSource(opts.sandbox, opts.source, tools);
  const violations = v.violations.map((x) => ({ where: x.where, message: x.message, ...(x.line ? { line: x.line } : {}) }));
  if (!v.ok) return fail(v.failure?.kind ?? 'contract-violation', v.failure?.reason ?? violations.map((x) => `${x.where}: ${x.message}`).join('; '), violations);
  if (opts.promptOnlyBase !== null) {
    // Parsed in this process, but only after the validator child compiled the same source within its limits.
    let diff: string[];
    try {
      diff = promptOnlyDifferences(opts.promptOnlyBase, opts.source);
    } catch (e) {
      return fail('compile-error', `the prompt-only comparison could not parse the candidate: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (diff.length) return fail('prompt-only-violation', `prompt-only search may change only systemPrompt and userTemplate; this candidate also changes: ${diff.join(', ')}`);
  }
  const smoke = await smokeRun(opts.sandbox, opts.instance, opts.source);
  if (smoke) return fail(smoke.kind, `smoke run: ${smoke.reason}`, [], 'failed');
  return { valid: true, failureKind: null, reason: null, violations: [], smoke: `hooks ran on ${SMOKE_TASKS} D_harness task views (start, parse, feedback) without the model` };
}

const firstFailure = (rs: PhaseResult[], what: string, tasks: EnvTask<unknown>[]): { kind: string; reason: string } | null => {
  const i = rs.findIndex((r) => !r.ok);
  if (i < 0) return null;
  const r = rs[i];
  return r.ok ? null : { kind: r.failure.kind, reason: `${what} on task ${tasks[i % tasks.length].id}${r.failure.hook ? ` (hook ${r.failure.hook})` : ''}: ${r.failure.reason}` };
};

/**
 * Runs every phase once per task through the sandbox: start (setup + first message), parse of a few
 * scripted model texts, and feedback + stop rule after a real tool result (when the domain has tools), a
 * format error and an illegal action. Returns the first failure, or null.
 */
export async function smokeRun(sandbox: SandboxPool, instance: DomainInstance, source: string): Promise<{ kind: string; reason: string } | null> {
  const loaded = await sandbox.loadHarness(source);
  if (!loaded.ok) return { kind: loaded.failure.kind, reason: loaded.failure.reason };
  const runner = loaded.runner;
  const env = instance.environment;
  const tools: ToolSpec[] = [...env.tools];
  const tasks = instance.splits.harness.slice(0, SMOKE_TASKS);
  const views = tasks.map((t) => {
    const state = env.initialState(t);
    const task: TaskView = { id: t.id, question: t.question, view: t.view };
    return { t, state, task, observation: env.observe(t, state) as JsonObject };
  });
  const start = await runner.runPhases(views.map((v) => ({ phase: 'start', input: { task: v.task, observation: v.observation, tools } })));
  const startFail = firstFailure(start, 'start', tasks);
  if (startFail) return startFail;
  const started = start.map((r) => (r.ok ? (r.output as StartPhaseOutput) : null));
  for (let i = 0; i < views.length; i++) {
    const msgs = started[i]?.messages ?? [];
    if (!msgs.some((m) => m.role === 'user' && m.content.trim() !== '')) return { kind: 'contract-violation', reason: `the first messages of task ${tasks[i].id} have no non-empty user message` };
  }
  const texts = ['<answer>1</answer>', 'I am not sure.', ...tools.map((t) => `<${t.name}>${tasks[0]?.question.slice(0, 40) ?? 'x'}</${t.name}>`)];
  const parseCalls: PhaseCall[] = [];
  views.forEach((v, i) => texts.forEach((text) => parseCalls.push({ phase: 'parse', input: { task: v.task, state: started[i]?.state ?? null, turn: 0, text, tools, observation: v.observation } })));
  const parseFail = firstFailure(await runner.runPhases(parseCalls), 'parseAction', tasks.flatMap((t) => texts.map(() => t)));
  if (parseFail) return parseFail;
  const reactCalls: PhaseCall[] = [];
  for (let i = 0; i < views.length; i++) {
    const v = views[i];
    const events: TurnEvent[] = [
      { kind: 'format-error', reason: 'no complete action tag found', formatErrorsLeft: 1 },
      { kind: 'illegal', answer: '1', text: '1 is not a legal action', data: null, illegalActionsLeft: 1 },
    ];
    for (const tool of tools) {
      const params = effectiveToolParams(loaded.manifest.config, tool);
      const r = await env.executeTool(v.t, v.state, { tool: tool.name, input: v.t.question, params });
      events.push({ kind: 'tool', tool: tool.name, input: v.t.question, params, ok: r.ok, text: r.text, data: r.data });
    }
    for (const event of events) {
      const messages: HarnessMessage[] = [...(started[i]?.messages ?? []), { role: 'assistant', content: texts[0] }];
      reactCalls.push({ phase: 'react', input: { task: v.task, state: started[i]?.state ?? null, turn: 0, event, messages, tools, observation: v.observation } });
    }
  }
  const perTask = reactCalls.length / Math.max(1, views.length);
  return firstFailure(await runner.runPhases(reactCalls), 'feedback', tasks.flatMap((t) => Array.from({ length: perTask }, () => t)));
}
