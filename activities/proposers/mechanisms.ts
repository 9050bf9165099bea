// The built-in proposer's catalogue of harness mechanisms. Each mechanism is one source transformation of
// a parent harness (one mechanism per candidate), generic across domains: prompt texts are built from the
// environment's tool names and answer kind, observation fields from what varies across D_harness task
// views, budgets and tool parameters from the parent's values and the environment's declared ranges.
// Each has a weight from the failure categories counted in the parent's traces.
import type { ToolSpec } from '../../agent/environment';
import { HARNESS_LIMITS } from '../../agent/harness-contract';
import { replaceInitializer, tsLiteral, tsString, type HarnessSourceInfo, type LiteralConfig, type SourceEdit } from './harness-source';
import { emptyFeedbackPlan, setHooks, type ExistingHook, type FeedbackPlan, type HookPlan } from './hook-templates';
import type { TraceStats } from './trace-stats';

/** Format retries (and extra turns) a resampling `forced-first-tool` candidate gets: on the embedded math
 * base, 3 raised D_harness success from 8.2 % to 13.5 % and 5 to 15.6 % (128 tasks x 4). */
const RESAMPLE_RETRIES = 4;

export interface MechanismEnv {
  tools: readonly ToolSpec[];
  answerKind: 'answer' | 'move';
  /** View and observation fields that vary across D_harness tasks and are not already in the question. */
  templateFields: string[];
  /** The observation's varying fields (they can change during an episode). */
  observationFields: string[];
  promptOnly: boolean;
}

export interface ParentHarness {
  /** Archive name (incoming, r1-c2, ...). */
  name: string;
  source: string;
  info: HarnessSourceInfo;
  config: LiteralConfig;
  hooks: ExistingHook[];
  stats: TraceStats | null;
  successRate: number;
  meanTurns: number;
}

export interface Transformation {
  mechanism: string;
  axis: string;
  hypothesis: string;
  changes: string;
  edits: SourceEdit[];
}

export interface Mechanism {
  id: string;
  axis: string;
  /** Allowed in prompt-only search (changes only systemPrompt / userTemplate). */
  promptOnly: boolean;
  weight(p: ParentHarness, env: MechanismEnv): number;
  apply(p: ParentHarness, env: MechanismEnv, variant: number, partner: ParentHarness | null): Transformation | null;
}

const frac = (s: TraceStats | null, n: (s: TraceStats) => number): number => (s && s.episodes ? n(s) / s.episodes : 0);
const answerHint = (env: MechanismEnv): string => `<answer>${env.answerKind === 'move' ? 'move' : 'answer'}</answer>`;
const toolTags = (env: MechanismEnv): string => env.tools.map((t) => `<${t.name}>...</${t.name}>`).join(' or ');
const short = (s: string): string => JSON.stringify(s.length > 60 ? s.slice(0, 57) + '...' : s);

function edit(p: ParentHarness, prop: string, text: string): SourceEdit[] | null {
  const e = replaceInitializer(p.info, prop, text);
  return e ? [e] : null;
}

function promptEdit(p: ParentHarness, prop: 'systemPrompt' | 'userTemplate', value: string): SourceEdit[] | null {
  const cur = p.config[prop];
  if (cur === undefined || cur === value || value.length > HARNESS_LIMITS.maxPromptChars) return null;
  return edit(p, prop, tsString(value));
}

function systemPromptVariants(env: MechanismEnv): string[] {
  const a = answerHint(env);
  if (env.tools.length === 0) {
    return [
      `Read everything you are given before you reply. Reply with one ${a}.`,
      `Check that your ${env.answerKind} fits the facts shown. Then reply ${a}.`,
      `Be brief. Reply only ${a}.`,
      `Look at every line of the task, pick one ${env.answerKind} and reply ${a}.`,
    ];
  }
  const t = toolTags(env);
  return [
    `Use ${t} to find what you need, then reply ${a}.`,
    `Always call ${t} before you answer. Finish with ${a}.`,
    `Be brief: one tool call per turn, then ${a}.`,
    `Copy the exact words you need into ${t}. Read the result, then reply ${a}.`,
  ];
}

function feedbackPlanOf(p: ParentHarness): FeedbackPlan | null {
  const h = p.hooks.find((x) => x.name === 'feedback');
  if (!h) return emptyFeedbackPlan();
  return h.plan?.hook === 'feedback' ? { ...h.plan.plan } : null;
}

function hookTransformation(p: ParentHarness, env: MechanismEnv, plans: HookPlan[], extra: SourceEdit[] = []): SourceEdit[] | null {
  const edits = setHooks(p.info, plans, answerHint(env));
  return edits ? [...edits, ...extra] : null;
}

function feedbackMechanism(id: string, axis: string, hypothesis: string, weight: Mechanism['weight'], change: (f: FeedbackPlan, env: MechanismEnv) => string | null): Mechanism {
  return {
    id, axis, promptOnly: false, weight,
    apply(p, env) {
      const plan = feedbackPlanOf(p);
      if (!plan) return null;
      const changes = change(plan, env);
      if (!changes) return null;
      const edits = hookTransformation(p, env, [{ hook: 'feedback', plan }]);
      return edits ? { mechanism: id, axis, hypothesis, changes, edits } : null;
    },
  };
}

export const MECHANISMS: readonly Mechanism[] = [
  {
    id: 'system-prompt', axis: 'prompt', promptOnly: true,
    weight: (p) => 1 + 2 * frac(p.stats, (s) => s.failures['wrong-answer']),
    apply(p, env, variant) {
      const options = systemPromptVariants(env).filter((v) => v !== p.config.systemPrompt);
      const value = options[variant % options.length];
      const edits = promptEdit(p, 'systemPrompt', value);
      return edits && { mechanism: 'system-prompt', axis: 'prompt', hypothesis: 'a system prompt that states the workflow (tools, then the final tag) makes the model follow it', changes: `systemPrompt ${short(p.config.systemPrompt ?? '')} -> ${short(value)}`, edits };
    },
  },
  {
    id: 'answer-format-reminder', axis: 'prompt', promptOnly: true,
    weight: (p) => 1 + 3 * frac(p.stats, (s) => s.failures['format-errors'] + s.failures['turn-limit']),
    apply(p, env) {
      const cur = p.config.systemPrompt;
      if (cur === undefined || cur.includes('<answer>')) return null;
      const value = `${cur}${cur ? ' ' : ''}Finish with ${answerHint(env)}.`;
      const edits = promptEdit(p, 'systemPrompt', value);
      return edits && { mechanism: 'answer-format-reminder', axis: 'prompt', hypothesis: 'episodes end without a final tag; a reminder of the answer format in the system prompt fixes that', changes: `systemPrompt += ${short(`Finish with ${answerHint(env)}.`)}`, edits };
    },
  },
  {
    id: 'template-tools', axis: 'prompt', promptOnly: true,
    weight: (p) => 1 + 3 * frac(p.stats, (s) => s.failedWithoutTool),
    apply(p, env) {
      const cur = p.config.userTemplate;
      if (!env.tools.length || cur === undefined || cur.includes('{tools}')) return null;
      const edits = promptEdit(p, 'userTemplate', `${cur}\nTools:\n{tools}`);
      return edits && { mechanism: 'template-tools', axis: 'prompt', hypothesis: 'failed episodes rarely call a tool; describing the tools in the task message makes their use more likely', changes: 'userTemplate += tool descriptions ({tools})', edits };
    },
  },
  {
    id: 'template-labels', axis: 'prompt', promptOnly: true,
    weight: (p) => 1 + frac(p.stats, (s) => s.failures['format-errors'] + s.failures['wrong-answer']),
    apply(p) {
      const cur = p.config.userTemplate;
      if (cur === undefined || !cur.includes('{question}') || cur.includes('Task: {question}')) return null;
      const edits = promptEdit(p, 'userTemplate', cur.replace('{question}', 'Task: {question}\n'));
      return edits && { mechanism: 'template-labels', axis: 'prompt', hypothesis: 'a labelled task on its own line separates it from the instructions', changes: 'userTemplate: {question} -> "Task: {question}" on its own line', edits };
    },
  },
  {
    id: 'template-fields', axis: 'observation', promptOnly: true,
    weight: (p) => 1 + 2 * frac(p.stats, (s) => s.failures['illegal-actions'] + s.failures['wrong-answer']),
    apply(p, env) {
      const cur = p.config.userTemplate;
      if (cur === undefined) return null;
      const fields = env.templateFields.filter((f) => !cur.includes(`{${f}}`));
      if (!fields.length) return null;
      const edits = promptEdit(p, 'userTemplate', `${cur}${fields.map((f) => `\n${f}: {${f}}`).join('')}`);
      return edits && { mechanism: 'template-fields', axis: 'observation', hypothesis: 'the task view holds facts the first message does not show; showing them lets the model use them', changes: `userTemplate += ${fields.join(', ')}`, edits };
    },
  },
  {
    id: 'turn-budget', axis: 'control', promptOnly: false,
    weight: (p) => 1 + 4 * frac(p.stats, (s) => s.failures['turn-limit']),
    apply(p) {
      const cur = p.config.maxTurns;
      if (cur === undefined || cur >= HARNESS_LIMITS.maxTurns) return null;
      const next = Math.min(HARNESS_LIMITS.maxTurns, cur + Math.max(2, Math.ceil(cur / 2)));
      const edits = edit(p, 'maxTurns', String(next));
      return edits && { mechanism: 'turn-budget', axis: 'control', hypothesis: 'episodes hit the turn limit before answering; more turns let tool use finish', changes: `maxTurns ${cur} -> ${next}`, edits };
    },
  },
  {
    id: 'retry-budgets', axis: 'control', promptOnly: false,
    weight: (p) => 1 + 4 * frac(p.stats, (s) => s.failures['format-errors'] + s.failures['illegal-actions']),
    apply(p, _env, variant) {
      const cur = p.config.retryBudgets;
      if (!cur) return null;
      const s = p.stats;
      const preferIllegal = s ? s.failures['illegal-actions'] > s.failures['format-errors'] : variant % 2 === 1;
      const key = preferIllegal ? 'illegalActions' : 'formatErrors';
      const next = { ...cur, [key]: Math.min(HARNESS_LIMITS.maxRetryBudget, cur[key] + 2) };
      if (next[key] === cur[key]) return null;
      const edits = edit(p, 'retryBudgets', tsLiteral(next));
      return edits && { mechanism: 'retry-budgets', axis: 'control', hypothesis: `episodes end on ${key === 'formatErrors' ? 'format errors' : 'illegal actions'}; a retry with feedback recovers some`, changes: `retryBudgets.${key} ${cur[key]} -> ${next[key]}`, edits };
    },
  },
  {
    id: 'tool-params', axis: 'retrieval', promptOnly: false,
    weight: (p) => 1 + 2 * frac(p.stats, (s) => s.failures['wrong-answer'] + s.failures.context),
    apply(p, env, variant) {
      const tools = env.tools.filter((t) => Object.keys(t.params).length > 0);
      if (!tools.length || !p.config.toolParams) return null;
      // One parameter per candidate (one mechanism, one change), so the archive tells which one mattered.
      const tool = tools[variant % tools.length];
      const keys = Object.keys(tool.params);
      const key = keys[Math.floor(variant / tools.length) % keys.length];
      const shrink = frac(p.stats, (s) => s.failures.context) > 0.25;
      const cur = p.config.toolParams[tool.name] ?? {};
      const spec = tool.params[key];
      const v = cur[key] ?? spec.default;
      const to = shrink ? Math.max(spec.min, Math.floor(v / 2)) : Math.min(spec.max, Math.max(spec.default, v * 2));
      if (to === v) return null;
      const next: Record<string, number> = { ...cur, [key]: to };
      const edits = edit(p, 'toolParams', tsLiteral({ ...p.config.toolParams, [tool.name]: next }));
      return edits && {
        mechanism: 'tool-params', axis: 'retrieval',
        hypothesis: shrink ? 'episodes run out of context; smaller tool outputs keep them inside it' : 'answers are wrong after tool calls; more and longer tool output gives the model the facts',
        changes: `toolParams.${tool.name}.${key} ${v} -> ${to}`, edits,
      };
    },
  },
  {
    id: 'forced-first-tool', axis: 'control', promptOnly: false,
    weight: (p) => 1 + 4 * frac(p.stats, (s) => s.failedWithoutTool),
    apply(p, env, variant) {
      if (!env.tools.length || p.hooks.some((h) => h.name === 'parseAction') || !p.config.retryBudgets || p.config.maxTurns === undefined) return null;
      // Two forms: the harness makes the first call itself (the first tool, on the task's question: a forced
      // first search), or it rejects every answer given before a tool call and lets the model sample that
      // turn again from the same context (the rejected turn is dropped; a few format retries pay for it).
      if (variant % 2 === 0) {
        const edits = hookTransformation(p, env, [{ hook: 'parseAction', plan: { firstTool: true, callWithQuestion: true } }]);
        return edits && {
          mechanism: 'forced-first-tool', axis: 'control',
          hypothesis: 'failed episodes answer without calling a tool; calling the first tool on the question before the model answers grounds the answer',
          changes: `parseAction: a first turn without a tool call becomes <${env.tools[0].name}> on the task's question`, edits,
        };
      }
      const feedback = feedbackPlanOf(p);
      if (!feedback || p.hooks.some((h) => h.plan === null)) return null; // the hooks keep their state in the harness state
      const retries = Math.max(p.config.retryBudgets.formatErrors, RESAMPLE_RETRIES);
      const turns = Math.min(HARNESS_LIMITS.maxTurns, p.config.maxTurns + RESAMPLE_RETRIES);
      const extra: SourceEdit[] = [];
      const changes = ['parseAction: an answer before the first tool call is rejected', 'feedback: a rejected turn is dropped and sampled again'];
      if (retries !== p.config.retryBudgets.formatErrors) {
        const e = edit(p, 'retryBudgets', tsLiteral({ ...p.config.retryBudgets, formatErrors: retries }));
        if (!e) return null;
        extra.push(...e);
        changes.push(`retryBudgets.formatErrors ${p.config.retryBudgets.formatErrors} -> ${retries}`);
      }
      if (turns !== p.config.maxTurns) {
        const e = edit(p, 'maxTurns', String(turns));
        if (!e) return null;
        extra.push(...e);
        changes.push(`maxTurns ${p.config.maxTurns} -> ${turns}`);
      }
      const edits = hookTransformation(p, env, [
        { hook: 'parseAction', plan: { firstTool: true, untilTool: true } },
        { hook: 'feedback', plan: { ...feedback, dropRejected: true } },
      ], extra);
      return edits && {
        mechanism: 'forced-first-tool', axis: 'control',
        hypothesis: 'failed episodes answer without calling a tool; rejecting answers until a tool has been called, and sampling the rejected turn again, makes more episodes use a tool',
        changes: changes.join('; '), edits,
      };
    },
  },
  feedbackMechanism('feedback-nudge', 'feedback', 'after a tool result the model does not finish; a nudge to answer (and the exact syntax after a format error) ends episodes with an answer',
    (p) => 1 + 3 * frac(p.stats, (s) => s.failures['turn-limit'] + s.failures['format-errors']),
    (f) => (f.nudge && f.syntaxReminder ? null : ((f.nudge = true), (f.syntaxReminder = true), 'feedback: answer nudge after tool results, action syntax after format errors'))),
  feedbackMechanism('tool-annotation', 'observation', 'tool results are hard to relate to the call; prefixing each with the call that produced it helps the model read them',
    (p) => 1 + 2 * Math.min(1, frac(p.stats, (s) => s.toolErrors)),
    (f, env) => (f.annotateTool || !env.tools.length ? null : ((f.annotateTool = true), (f.toolChars = 600), 'feedback: tool results prefixed with their call, cut to 600 characters'))),
  feedbackMechanism('observation-refresh', 'observation', 'the model loses track of the changing state; re-showing the observation after each event keeps it current',
    (p) => 1 + 3 * frac(p.stats, (s) => s.failures['illegal-actions']) + frac(p.stats, (s) => s.failures['wrong-answer']),
    (f, env) => {
      const add = env.observationFields.filter((k) => !f.fields.includes(k));
      if (!add.length) return null;
      f.fields = [...f.fields, ...add];
      return `feedback: re-show observation fields ${add.join(', ')}`;
    }),
  {
    id: 'crossover', axis: 'crossover', promptOnly: true,
    weight: () => 1.5,
    apply(p, env, variant, partner) {
      if (!partner || partner.source === p.source) return null;
      if (env.promptOnly) {
        const prop = variant % 2 === 0 ? 'userTemplate' : 'systemPrompt';
        const value = partner.config[prop];
        const edits = value === undefined ? null : promptEdit(p, prop, value);
        return edits && { mechanism: 'crossover', axis: 'crossover', hypothesis: `${partner.name}'s ${prop} combined with ${p.name}'s other prompt keeps the strengths of both`, changes: `${prop} from ${partner.name}`, edits };
      }
      return crossControl(p, partner, env);
    },
  },
];

/** Parent's prompts with the partner's control (turns, retries, tool parameters) and its built-in hooks. */
function crossControl(p: ParentHarness, partner: ParentHarness, env: MechanismEnv): Transformation | null {
  const edits: SourceEdit[] = [];
  const taken: string[] = [];
  const fields: Array<[keyof LiteralConfig, string]> = [['maxTurns', 'maxTurns'], ['retryBudgets', 'retryBudgets'], ['toolParams', 'toolParams']];
  for (const [key, prop] of fields) {
    const a = p.config[key];
    const b = partner.config[key];
    if (a === undefined || b === undefined || JSON.stringify(a) === JSON.stringify(b)) continue;
    const e = edit(p, prop, typeof b === 'number' ? String(b) : tsLiteral(b as Record<string, number>));
    if (!e) return null;
    edits.push(...e);
    taken.push(prop);
  }
  const plans = partner.hooks
    .filter((h) => h.plan && !p.hooks.some((x) => x.name === h.name))
    .map((h) => h.plan as HookPlan);
  if (plans.length) {
    const e = setHooks(p.info, plans, answerHint(env));
    if (!e) return null;
    edits.push(...e);
    taken.push(...plans.map((h) => `hooks.${h.hook}`));
  }
  if (!taken.length) return null;
  return { mechanism: 'crossover', axis: 'crossover', hypothesis: `${p.name}'s prompts with ${partner.name}'s control and hooks combine two working parts`, changes: `from ${partner.name}: ${taken.join(', ')}`, edits };
}
