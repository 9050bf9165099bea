// Reward provenance, owned by the loop: the answer span the model wrote (never chosen by a harness), the
// no-grading comparison (a harness must react the same way whatever answer sits in that span) and the
// no-injection check (a submitted answer must not have been written into the model's prompts by the
// harness). Rules and their known limits: docs/writing-a-harness.md, "Actions and provenance".

import { ANSWER_TAG } from './actions';
import type { JsonValue } from './environment';
import type { AnswerForm, HarnessMessage } from './harness-types';

/** Where the model's answer is in one turn's text. `token`: every occurrence of one distinct token. */
export interface AnswerSpan {
  form: 'tag' | AnswerForm;
  /** The span's trimmed text. */
  text: string;
  /** Character ranges of the span in the turn's text (several only for the token form). */
  ranges: Array<[number, number]>;
}

const WORD = /[\p{L}\p{N}]/u;

function trimmedRange(text: string, start: number, end: number): [number, number] {
  while (start < end && /\s/.test(text[start])) start++;
  while (end > start && /\s/.test(text[end - 1])) end--;
  return [start, end];
}

/** The body of the first complete `<answer>...</answer>` (the default parser's reading). */
function tagSpan(text: string): AnswerSpan | null {
  const open = `<${ANSWER_TAG}>`;
  for (let at = text.indexOf(open); at >= 0; at = text.indexOf(open, at + 1)) {
    const end = text.indexOf(`</${ANSWER_TAG}>`, at + open.length);
    if (end < 0) continue;
    const [s, e] = trimmedRange(text, at + open.length, end);
    return { form: 'tag', text: text.slice(s, e), ranges: [[s, e]] };
  }
  return null;
}

/** The last balanced `\boxed{...}`. */
function boxedSpan(text: string): AnswerSpan | null {
  let found: AnswerSpan | null = null;
  for (let at = text.indexOf('\\boxed{'); at >= 0; at = text.indexOf('\\boxed{', at + 1)) {
    let depth = 0;
    for (let i = at + 6; i < text.length; i++) {
      if (text[i] === '{') depth++;
      else if (text[i] === '}' && --depth === 0) {
        const [s, e] = trimmedRange(text, at + 7, i);
        found = { form: 'boxed', text: text.slice(s, e), ranges: [[s, e]] };
        break;
      }
    }
  }
  return found;
}

/** The single distinct token matching the environment's answer pattern (none if zero or two distinct match). */
function tokenSpan(text: string, pattern: RegExp): AnswerSpan | null {
  const re = new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`);
  const ranges: Array<[number, number]> = [];
  let token: string | null = null;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m[0] === '') {
      re.lastIndex++;
      continue;
    }
    const s = m.index;
    const e = s + m[0].length;
    if ((s > 0 && WORD.test(text[s - 1])) || (e < text.length && WORD.test(text[e]))) continue;
    if (token !== null && token !== m[0]) return null;
    token = m[0];
    ranges.push([s, e]);
  }
  return token === null ? null : { form: 'token', text: token, ranges };
}

/**
 * The model's answer span in one turn: the first complete `<answer>` tag; else, only where the harness
 * config lists them, the last balanced `\boxed{}` or the single token matching the environment's answer
 * pattern. Null when the turn holds none.
 */
export function extractAnswerSpan(text: string, forms: readonly AnswerForm[] | undefined, pattern: RegExp | undefined): AnswerSpan | null {
  const tag = tagSpan(text);
  if (tag) return tag;
  if (forms?.includes('boxed')) {
    const boxed = boxedSpan(text);
    if (boxed) return boxed;
  }
  if (forms?.includes('token') && pattern) return tokenSpan(text, pattern);
  return null;
}

/** The turn's text with the span replaced by `alternative` (every occurrence for the token form). */
export function swapSpan(text: string, span: AnswerSpan, alternative: string): string {
  let out = '';
  let from = 0;
  for (const [s, e] of span.ranges) {
    out += text.slice(from, s) + alternative;
    from = e;
  }
  return out + text.slice(from);
}

/** A wrong value of the same shape, for domains that give no alternative: digits and letters shifted by one. */
export function perturbAnswer(answer: string): string {
  const out = answer.replace(/[0-9a-zA-Z]/g, (c) => {
    if (c === '9') return '0';
    if (c === 'z') return 'a';
    if (c === 'Z') return 'A';
    return String.fromCharCode(c.charCodeAt(0) + 1);
  });
  return out === answer ? `${answer}0` : out;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * True when two hook outputs are equal once every occurrence of the span's text and of its alternative
 * (case-insensitive, also as JSON string escapes) is replaced by one placeholder.
 */
export function sameUpToAnswer(a: JsonValue | object | null, b: JsonValue | object | null, values: readonly string[]): boolean {
  const forms = [...new Set(values.flatMap((v) => [v, JSON.stringify(v).slice(1, -1)]).filter((v) => v !== ''))].sort((x, y) => y.length - x.length);
  if (forms.length === 0) return JSON.stringify(a) === JSON.stringify(b);
  const re = new RegExp(forms.map(escapeRegExp).join('|'), 'gi');
  const mask = (v: unknown) => JSON.stringify(v).replace(re, '\u0000');
  return mask(a) === mask(b);
}

/**
 * The string and number fields of a JSON value (nested objects too, also inside arrays): the trusted units
 * a visible datum contributes. Plain elements of an array are not units of their own: copying one element
 * of a list (one move of the legal moves) would let a harness pick the answer out of it.
 */
export function stringLeaves(value: JsonValue | undefined, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (typeof value === 'number') out.push(String(value));
  else if (Array.isArray(value)) {
    for (const v of value) if (v !== null && typeof v === 'object') stringLeaves(v, out);
  } else if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) stringLeaves(v, out);
  }
  return out;
}

/** Minimum length of a partial verbatim copy of a trusted unit that counts as a copy. */
export const MIN_COPY_CHARS = 16;

/** Token-bounded occurrences (start offsets) of `needle` in `hay`. */
function occurrences(hay: string, needle: string): number[] {
  const out: number[] = [];
  for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + 1)) {
    const end = at + needle.length;
    if ((at > 0 && WORD.test(hay[at - 1])) || (end < hay.length && WORD.test(hay[end]))) continue;
    out.push(at);
  }
  return out;
}

/**
 * True when the occurrence hay[at, at + len) lies in a verbatim copy of the trusted unit: the whole unit, or
 * at least MIN_COPY_CHARS characters of it that reach past the occurrence on each side by a word character
 * (or to the unit's own edge). The last condition stops a harness from starting or ending a copy right at
 * the answer (a list rotated to begin with the solution keeps every other neighbour verbatim).
 */
function coveredBy(hay: string, at: number, len: number, unit: string): boolean {
  for (const p of occurrences(unit, hay.slice(at, at + len))) {
    let left = 0;
    while (left < p && left < at && unit[p - left - 1] === hay[at - left - 1]) left++;
    let right = 0;
    const uEnd = p + len;
    const hEnd = at + len;
    while (uEnd + right < unit.length && hEnd + right < hay.length && unit[uEnd + right] === hay[hEnd + right]) right++;
    const wholeLeft = left === p;
    const wholeRight = uEnd + right === unit.length;
    if (wholeLeft && wholeRight) return true;
    const leftOk = wholeLeft || WORD.test(hay.slice(at - left, at));
    const rightOk = wholeRight || WORD.test(hay.slice(hEnd, hEnd + right));
    if (left + len + right >= MIN_COPY_CHARS && leftOk && rightOk) return true;
  }
  return false;
}

/**
 * What one episode showed the model and which texts are trusted (not authored by the harness): the
 * harness's literal prompts, the visible task and observations, environment and tool outputs, and the
 * model's own turns. Collected by the loop as the episode runs; checked at every submission.
 */
export class EpisodeProvenance {
  /** Trusted texts and prompt texts, each with the model call before which it first appeared: a text
   * trusted later (the model's own answer turn, a later tool result) never vouches for an earlier prompt. */
  private readonly units = new Map<string, number>();
  private readonly prompts = new Map<string, number>();
  private readonly tainted: string[] = [];
  private calls = 0;
  private readonly normalized = new Map<string, string>();

  /** The normaliser, cached: units and prompts repeat across an episode's submissions. */
  private norm(text: string): string {
    let n = this.normalized.get(text);
    if (n === undefined) {
      n = this.normalize(text);
      this.normalized.set(text, n);
    }
    return n;
  }

  constructor(
    private readonly question: string,
    private readonly normalize: (s: string) => string,
    /** The environment's answer pattern: the question's tokens of that shape are what a harness may list. */
    private readonly pattern?: RegExp,
  ) {
    this.trust(question);
  }

  /**
   * An answer that is also a token of the question may be shown outside a copy only as part of a list of
   * all the question's tokens of the answer's shape (e.g. "Numbers in order: 30, 3, 24, 2"): the harness
   * may restate the question, not single out the one token that is the answer.
   */
  private listsQuestionTokens(hay: string): boolean {
    if (!this.pattern) return true;
    const re = new RegExp(this.pattern.source, this.pattern.flags.includes('g') ? this.pattern.flags : `${this.pattern.flags}g`);
    const q = this.normalize(this.question);
    const tokens = [...new Set([...this.question.matchAll(re)].map((m) => this.normalize(m[0])).filter((t) => t !== ''))];
    // Each token must also stand outside the copies of the question the prompt holds.
    return tokens.every((t) => occurrences(hay, t).some((at) => !coveredBy(hay, at, t.length, q)));
  }

  /** Texts that are environment or tool outputs: the only units that may be exactly the answer. */
  private readonly outputs = new Set<string>();

  trust(...texts: string[]): void {
    for (const t of texts) if (t.trim() !== '' && !this.units.has(t)) this.units.set(t, this.calls);
  }

  /** Trusts outputs of the environment or a tool (a calculator result of exactly the answer may be shown). */
  trustOutput(...texts: string[]): void {
    this.trust(...texts);
    for (const t of texts) this.outputs.add(t);
  }

  /** A computing tool's result on an input neither the model nor the task wrote: never trusted. */
  taint(text: string): void {
    this.tainted.push(text);
  }

  /** Records a prompt (the messages a model call saw). */
  saw(messages: readonly HarnessMessage[]): void {
    for (const m of messages) if (!this.prompts.has(m.content)) this.prompts.set(m.content, this.calls);
    this.calls++;
  }

  /**
   * The no-injection check: the normalised answer may occur in a prompt only inside a verbatim copy of a
   * trusted text, unless it also occurs in the task's question. Returns a reason when it does not.
   */
  injection(answer: string): string | null {
    const a = this.normalize(answer);
    if (a === '') return null;
    const shown = [...this.prompts.keys()].some((p) => occurrences(this.norm(p), a).length > 0);
    if (shown && this.tainted.some((t) => occurrences(this.norm(t), a).length > 0)) {
      return `the answer ${JSON.stringify(a.slice(0, 80))} was computed by a tool on an input the model did not write, and shown to the model before it gave it`;
    }
    const inQuestion = occurrences(this.norm(this.question), a).length > 0;
    // A view or observation value that is exactly the answer (a level "3") vouches for nothing.
    const allUnits = [...this.units].map(([u, at]) => ({ u: this.norm(u), at, raw: u })).filter((x) => x.u !== a || this.outputs.has(x.raw));
    const units = allUnits.filter((x) => x.u.includes(a));
    for (const [content, seen] of this.prompts) {
      const hay = this.norm(content);
      for (const at of occurrences(hay, a)) {
        if (!units.some((x) => x.at <= seen && coveredBy(hay, at, a.length, x.u)) && !(inQuestion && this.listsQuestionTokens(hay))) {
          const context = hay.slice(Math.max(0, at - 40), at + a.length + 40);
          return `the answer ${JSON.stringify(a.slice(0, 80))} was in harness-written prompt text ("...${context}...") before the model gave it`;
        }
      }
    }
    return null;
  }
}

/** `value` with `f` applied to every string in it (for building the no-grading check's swapped inputs). */
export function mapStrings<T>(value: T, f: (s: string) => string): T {
  if (typeof value === 'string') return f(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => mapStrings(v, f)) as T;
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, f)])) as T;
  return value;
}

/** The no-grading check's pending comparison for one turn: the span, its alternative, the swapped text. */
export interface AnswerSwap {
  span: AnswerSpan;
  alternative: string;
  swappedText: string;
  /** The harness state parseAction returned for the swapped text. */
  swappedState: JsonValue;
}

/** The bodies of every complete `<name>...</name>` tag but `<answer>` in a text (the model's own tool inputs;
 * an answer body is no unit of its own, or any copy of the answer would count as a copy). */
export function tagBodies(text: string): string[] {
  return [...text.matchAll(/<([a-z][a-z0-9_]*)>([\s\S]*?)<\/\1>/g)].filter((m) => m[1] !== ANSWER_TAG).map((m) => m[2].trim());
}

/** True when `input` (whitespace ignored) is written in one of `texts`: a computing tool's input the model or the task wrote. */
export function inputWrittenIn(input: string, texts: readonly string[]): boolean {
  const squash = (s: string) => s.normalize('NFKC').replace(/\s+/g, '');
  const needle = squash(input);
  return needle !== '' && texts.some((t) => squash(t).includes(needle));
}
