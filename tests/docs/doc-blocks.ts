// The shell blocks of the project's Markdown and their doc-test markers: which files are read, how a block
// becomes commands (continuations joined, `$ ` prompts and comment lines dropped), and the marker grammar.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/** Fence languages that hold shell commands; every such block must carry a marker. */
export const SHELL_LANGS = new Set(['sh', 'bash', 'console', 'shell', 'zsh']);
export type Kind = 'run' | 'run-with-placeholders' | 'starts' | 'skip';
const KINDS = new Set<Kind>(['run', 'run-with-placeholders', 'starts', 'skip']);
const OPTIONS: Record<Kind, string[]> = {
  run: ['lines', 'timeout', 'expect', 'exit', 'fixture'],
  'run-with-placeholders': ['lines', 'timeout', 'expect', 'exit', 'fixture', 'id'],
  starts: ['lines', 'timeout', 'expect', 'fixture', 'id', 'port'],
  skip: ['lines', 'reason'],
};

export interface Directive { kind: Kind; lines?: Set<number>; options: Record<string, string> }
export interface Command {
  /** 1-based among the block's commands (what `lines=` counts). */
  index: number;
  /** 1-based line in the Markdown file. */
  line: number;
  text: string;
  directive: Directive;
}
export interface Block { file: string; line: number; lang: string; commands: Command[]; problems: string[] }

/** README.md, every folder README that shows shell blocks, docs/*.md and docs/reference/*.md. */
export function docFiles(root: string): string[] {
  const out = ['README.md'];
  for (const dir of ['docs', path.join('docs', 'reference')]) {
    if (!existsSync(path.join(root, dir))) continue;
    for (const f of readdirSync(path.join(root, dir)).sort()) if (f.endsWith('.md')) out.push(path.join(dir, f));
  }
  for (const d of readdirSync(root, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (!d.isDirectory() || d.name.startsWith('.') || d.name === 'node_modules' || d.name === 'docs') continue;
    if (existsSync(path.join(root, d.name, 'README.md'))) out.push(path.join(d.name, 'README.md'));
  }
  return out;
}

/** `key=value key="value with spaces"` pairs (a `\"` inside quotes is a quote). */
function parseOptions(text: string, problems: string[], where: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /\s*([a-z]+)=(?:"((?:[^"\\]|\\.)*)"|(\S+))/gy;
  let rest = text;
  for (;;) {
    re.lastIndex = 0;
    const m = re.exec(rest);
    if (!m) break;
    out[m[1]] = m[2] !== undefined ? m[2].replace(/\\"/g, '"') : m[3];
    rest = rest.slice(m[0].length);
  }
  if (rest.trim()) problems.push(`${where}: cannot read "${rest.trim()}" in the marker (options are key=value or key="value")`);
  return out;
}

function parseLines(spec: string): Set<number> {
  const out = new Set<number>();
  for (const part of spec.split(',')) {
    const [a, b] = part.split('-').map(Number);
    for (let i = a; i <= (b ?? a); i++) out.add(i);
  }
  return out;
}

/** `<!-- doc-test: KIND [options]; KIND lines=2-3 [options] -->` into directives (problems get a message). */
export function parseMarker(text: string, problems: string[], where: string): Directive[] {
  const body = /^<!--\s*doc-test:(.*)-->$/.exec(text.trim())?.[1];
  if (body === undefined) return [];
  const out: Directive[] = [];
  for (const part of body.split(/;(?=(?:[^"]*"[^"]*")*[^"]*$)/)) {
    const m = /^\s*([a-z-]+)(.*)$/.exec(part);
    if (!m || !KINDS.has(m[1] as Kind)) {
      problems.push(`${where}: unknown doc-test kind "${part.trim()}" (use ${[...KINDS].join(', ')})`);
      continue;
    }
    const kind = m[1] as Kind;
    const options = parseOptions(m[2], problems, where);
    for (const k of Object.keys(options)) if (!OPTIONS[kind].includes(k)) problems.push(`${where}: option ${k}= does not apply to ${kind} (it takes ${OPTIONS[kind].join(', ')})`);
    if (kind === 'skip' && !options.reason) problems.push(`${where}: skip needs reason="..." (why the test cannot run it)`);
    if (kind === 'starts' && !options.expect) problems.push(`${where}: starts needs expect="<regex>" (the output that shows it started)`);
    if (options.lines !== undefined && !/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(options.lines)) problems.push(`${where}: lines="${options.lines}" must be like 1,3-4`);
    out.push({ kind, options, ...(options.lines ? { lines: parseLines(options.lines) } : {}) });
  }
  return out;
}

/** The block's commands: continuation lines joined, blank and comment-only lines and `$ ` prompts dropped. */
function blockCommands(lines: string[], firstLine: number, lang: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let cur: { text: string; line: number } | null = null;
  lines.forEach((raw, i) => {
    let l = raw;
    if (cur) cur.text += '\n' + l;
    else {
      if (lang === 'console') {
        if (!l.startsWith('$ ')) return; // output lines of a console transcript
        l = l.slice(2);
      }
      if (!l.trim() || l.trim().startsWith('#')) return;
      cur = { text: l, line: firstLine + i };
    }
    if (/\\$/.test(l)) return;
    out.push(cur);
    cur = null;
  });
  if (cur) out.push(cur);
  return out;
}

/** Every shell block of one Markdown file, with its commands and the directive each command falls under. */
export function shellBlocks(file: string, text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]);
    if (!open) continue;
    const fence = open[2];
    let end = i + 1;
    while (end < lines.length && !lines[end].trim().startsWith(fence)) end++;
    const lang = open[3].toLowerCase();
    if (SHELL_LANGS.has(lang)) {
      const where = `${file}:${i + 1}`;
      const problems: string[] = [];
      let m = i - 1;
      while (m >= 0 && !lines[m].trim()) m--;
      const directives = m >= 0 ? parseMarker(lines[m], problems, where) : [];
      if (directives.length === 0 && problems.length === 0) problems.push(`${where}: a \`\`\`${lang} block without a marker: put <!-- doc-test: run --> (or run-with-placeholders, starts timeout=20s expect="...", skip reason="...") on the line before it`);
      const body = lines.slice(i + 1, end).map((l) => l.slice(open[1].length));
      const commands: Command[] = blockCommands(body, i + 2, lang).map((c, k) => {
        const index = k + 1;
        const directive = directives.find((d) => d.lines?.has(index)) ?? directives.find((d) => !d.lines);
        if (!directive && directives.length) problems.push(`${where}: command ${index} (line ${c.line}) is covered by no directive of the marker`);
        return { index, line: c.line, text: c.text, directive: directive ?? { kind: 'skip', options: { reason: 'no marker' } } };
      });
      for (const d of directives) for (const n of d.lines ?? []) if (n > commands.length) problems.push(`${where}: lines= names command ${n}, but the block has ${commands.length}`);
      blocks.push({ file, line: i + 1, lang, commands, problems });
    }
    i = end;
  }
  return blocks;
}

export function readBlocks(root: string): Block[] {
  return docFiles(root).flatMap((f) => shellBlocks(f, readFileSync(path.join(root, f), 'utf8')));
}

/**
 * A synopsis line as commands: `a|b|c` words give one command per alternative, `[--option ...]` groups are
 * dropped, and `<placeholder>`s are filled from `values` (an unknown one is an error naming it).
 */
export function expandSynopsis(text: string, values: Record<string, string>): string[] {
  let t = text.replace(/\s+\[[^\]]*\]/g, '');
  const missing = [...t.matchAll(/<([^<>]+)>/g)].map((m) => m[1]).filter((k) => !(k in values));
  if (missing.length) throw new Error(`no value for placeholder(s) ${missing.map((k) => `<${k}>`).join(', ')} in: ${text} (add them to the doc test's placeholder table)`);
  t = t.replace(/<([^<>]+)>/g, (_, k: string) => values[k]);
  // Alternatives: a word with | and no spaces around it (a pipe has spaces).
  const alt = /(^|\s)((?:[^\s|'"]+\|)+[^\s|'"]+)(?=\s|$)/.exec(t);
  if (!alt) return [t];
  const start = alt.index + alt[1].length;
  return alt[2].split('|').flatMap((choice) => expandSynopsis(t.slice(0, start) + choice + t.slice(start + alt[2].length), values));
}
