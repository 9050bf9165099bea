// Hook code the built-in proposer writes into candidates. Every generated hook carries a marker comment
// with the features it was rendered from, so a later round can re-render it with one more feature instead
// of stacking a second hook. All code is generic: tool names, the answer tag and observation fields come
// from the hook's input or from the plan, never from a domain.
import ts from 'typescript';
import { addHooks, indent, type HarnessSourceInfo, type SourceEdit } from './harness-source';

export interface FeedbackPlan {
  /** Tool results are prefixed with the call that produced them and cut to `toolChars`. */
  annotateTool: boolean;
  toolChars: number;
  /** After a tool result, remind the model how to finish. */
  nudge: boolean;
  /** Observation fields re-shown after each event (fields that change as the episode goes on). */
  fields: string[];
  /** Format errors answered with the exact action syntax. */
  syntaxReminder: boolean;
  /** Format errors are not shown at all: the rejected turn is dropped from the conversation and the model
   * samples that turn again from the same context (each retry still uses one turn and one format retry). */
  dropRejected?: boolean;
}

export interface ParsePlan {
  /** The first turn must call a tool: an answer there is turned back into a format error. */
  firstTool: boolean;
  /** With `firstTool`: instead of a format error, the harness makes the first call itself, the first tool
   * with the task's question as its input (a forced first search), and the model answers from its result. */
  callWithQuestion?: boolean;
  /** With `firstTool`: an answer is a format error until the episode has called a tool (the hook records the
   * first call in the harness state), not only on turn 0. */
  untilTool?: boolean;
}

export type HookPlan = { hook: 'feedback'; plan: FeedbackPlan } | { hook: 'parseAction'; plan: ParsePlan };

const MARKER = 'whale-builtin-hook';

export function emptyFeedbackPlan(): FeedbackPlan {
  return { annotateTool: false, toolChars: 0, nudge: false, fields: [], syntaxReminder: false };
}

function renderFeedback(p: FeedbackPlan, answerHint: string): string {
  const lines = [
    'feedback(input) {',
    '  const e = input.event;',
    "  const syntax = [...input.tools.map((t) => `<${t.name}>...</${t.name}>`), '<answer>...</answer>'].join(' or ');",
    "  let role: 'tool' | 'user' = 'tool';",
    "  let content = '';",
    "  if (e.kind === 'tool') {",
    p.annotateTool
      ? `    const text = e.text.length > ${p.toolChars} ? e.text.slice(0, ${p.toolChars}) + '...' : e.text;\n    content = \`<\${e.tool}>\${e.input}</\${e.tool}> returned\${e.ok ? '' : ' an error'}:\\n\${text}\`;`
      : '    content = e.text;',
    p.nudge ? `    content += '\\nIf this is enough, reply ${answerHint}. Otherwise call a tool again.';` : '',
    "  } else if (e.kind === 'format-error') {",
    p.dropRejected
      ? '    return { state: input.state, replace: input.messages.slice(0, -1) };'
      : `    role = 'user';\n    content = ${p.syntaxReminder ? '`Format error: ${e.reason}. Reply with exactly one of: ${syntax}.`' : '`Format error: ${e.reason}.`'};`,
    "  } else if (e.kind === 'illegal') {",
    "    role = 'user';",
    '    content = `Illegal: ${e.text}`;',
    '  } else {',
    '    content = e.text;',
    '  }',
    p.fields.length
      ? `  for (const key of ${JSON.stringify(p.fields).replace(/"/g, "'")}) {\n    const v = input.observation[key];\n    if (typeof v === 'string' || typeof v === 'number') content += \`\\n\${key}: \${v}\`;\n  }`
      : '',
    '  return { state: input.state, append: [{ role, content }] };',
    '}',
  ];
  return lines.filter((l) => l !== '').join('\n');
}

function renderParse(p: ParsePlan): string {
  return [
    'parseAction(input) {',
    "  const names = [...input.tools.map((t) => t.name), 'answer'];",
    '  let best: { at: number; name: string; body: string } | null = null;',
    '  for (const name of names) {',
    '    const at = input.text.indexOf(`<${name}>`);',
    '    if (at < 0) continue;',
    '    const end = input.text.indexOf(`</${name}>`, at + name.length + 2);',
    '    if (end < 0) continue;',
    '    if (best === null || at < best.at) best = { at, name, body: input.text.slice(at + name.length + 2, end).trim() };',
    '  }',
    "  const tags = names.map((n) => `<${n}>...</${n}>`);",
    p.untilTool
      ? "  const called = typeof input.state === 'object' && input.state !== null && !Array.isArray(input.state) && input.state.toolCalled === true;"
      : '',
    p.callWithQuestion
      ? "  if (input.turn === 0 && input.tools.length > 0 && (best === null || best.name === 'answer')) return { state: input.state, action: { kind: 'tool', tool: input.tools[0].name, input: input.task.question } };"
      : '',
    "  if (best === null) return { state: input.state, action: { kind: 'none', reason: `no complete action tag; use ${tags.join(' or ')}` } };",
    p.untilTool
      ? "  if (best.name !== 'answer') return { state: { toolCalled: true }, action: { kind: 'tool', tool: best.name, input: best.body } };"
      : "  if (best.name !== 'answer') return { state: input.state, action: { kind: 'tool', tool: best.name, input: best.body } };",
    p.callWithQuestion
      ? ''
      : `  if (${p.untilTool ? '!called' : 'input.turn === 0'} && names.length > 1) return { state: input.state, action: { kind: 'none', reason: \`call \${tags.slice(0, -1).join(' or ')} before answering\` } };`,
    "  return { state: input.state, action: { kind: 'answer', answer: best.body } };",
    '}',
  ].filter((l) => l !== '').join('\n');
}

export function renderHook(h: HookPlan, answerHint: string): string {
  const body = h.hook === 'feedback' ? renderFeedback(h.plan, answerHint) : renderParse(h.plan);
  return `/* ${MARKER} ${h.hook} ${JSON.stringify(h.plan)} */\n${body}`;
}

export interface ExistingHook {
  name: string;
  /** Span including the marker comment. */
  start: number;
  end: number;
  /** The plan it was rendered from, or null for a hook the built-in proposer did not write. */
  plan: HookPlan | null;
}

/** The hooks a harness defines, with the built-in proposer's plans where its marker is present. */
export function readHooks(info: HarnessSourceInfo): ExistingHook[] {
  if (!info.hooksObject) return [];
  const text = info.sourceFile.text;
  return info.hooksObject.properties.map((p) => {
    const name = p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : '?';
    const comments = ts.getLeadingCommentRanges(text, p.getFullStart()) ?? [];
    for (const c of comments) {
      const m = new RegExp(`^/\\* ${MARKER} (feedback|parseAction) (\\{.*\\}) \\*/$`).exec(text.slice(c.pos, c.end));
      if (m && m[1] === name) {
        try {
          const parsed = JSON.parse(m[2]) as FeedbackPlan & ParsePlan;
          // `untilTool` only when set: re-rendering (crossover) must reproduce older markers byte for byte.
          const plan: HookPlan = name === 'feedback' ? { hook: 'feedback', plan: { ...emptyFeedbackPlan(), ...parsed } } : { hook: 'parseAction', plan: { firstTool: Boolean(parsed.firstTool), callWithQuestion: Boolean(parsed.callWithQuestion), ...(parsed.untilTool ? { untilTool: true } : {}) } };
          return { name, start: c.pos, end: p.getEnd(), plan };
        } catch {
          break;
        }
      }
    }
    return { name, start: p.getStart(info.sourceFile), end: p.getEnd(), plan: null };
  });
}

/** Edits that set built-in hooks: a marked hook is re-rendered in place, a missing one is added. */
export function setHooks(info: HarnessSourceInfo, plans: HookPlan[], answerHint: string): SourceEdit[] | null {
  if (!info.typed) return null; // untyped hook parameters would be implicit any: the validator rejects them
  const existing = readHooks(info);
  const edits: SourceEdit[] = [];
  const added: string[] = [];
  for (const h of plans) {
    const cur = existing.find((e) => e.name === h.hook);
    if (cur && !cur.plan) return null; // a hand-written hook: not ours to overwrite
    const rendered = renderHook(h, answerHint);
    if (cur) edits.push({ start: cur.start, end: cur.end, text: indent(rendered, 4).slice(4) });
    else added.push(rendered);
  }
  if (added.length) {
    const e = addHooks(info, added);
    if (!e) return null;
    edits.push(e);
  }
  return edits;
}
