// Generates the reference docs from the code's own definitions:
//   docs/reference/config.md  from the zod schemas (run config v1, Temporal/worker config) via zod 4's JSON Schema
//   docs/reference/cli.md     from the commander program (cli/main.ts buildProgram()), every command and option
// Usage: npx tsx scripts/gen-docs.ts           (writes both files)
//        npx tsx scripts/gen-docs.ts --check   (exit 1 when a file is out of date; tests/product/docs-up-to-date.test.ts)
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import type { Command, Option, Argument } from 'commander';

export const ROOT = path.resolve(__dirname, '..');
export const CONFIG_DOC = path.join('docs', 'reference', 'config.md');
export const CLI_DOC = path.join('docs', 'reference', 'cli.md');
const REGENERATE = 'npx tsx scripts/gen-docs.ts';

type JsonSchema = {
  type?: string | string[]; properties?: Record<string, JsonSchema>; required?: string[]; anyOf?: JsonSchema[]; oneOf?: JsonSchema[];
  items?: JsonSchema; enum?: unknown[]; const?: unknown; default?: unknown; description?: string; pattern?: string;
  minimum?: number; maximum?: number; exclusiveMinimum?: number; exclusiveMaximum?: number; minLength?: number; maxLength?: number; minItems?: number;
};

interface Row { field: string; type: string; default: string; allowed: string; unit: string; description: string }

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const code = (s: string) => '`' + s.replace(/`/g, "'") + '`';
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** "text (unit: x)" -> ["text", "x"]. */
function splitUnit(description: string | undefined): [string, string] {
  if (!description) return ['', ''];
  const m = /\s*\(unit: ([^)]*)\)\s*$/.exec(description);
  return m ? [description.slice(0, m.index), m[1]] : [description, ''];
}

function isArtifactRef(s: JsonSchema): boolean {
  const keys = Object.keys(s.properties ?? {}).sort().join(',');
  return keys === 'bytes,kind,sha256,uri';
}

function typeOf(s: JsonSchema): string {
  if (s.const !== undefined) return code(JSON.stringify(s.const));
  if (s.enum) return 'enum';
  if (s.type === 'array') return `array of ${s.items ? typeOf(s.items) : 'any'}`;
  if (s.type === 'object' && isArtifactRef(s)) return 'artifact reference';
  return Array.isArray(s.type) ? s.type.join(' | ') : s.type ?? 'any';
}

function allowedOf(s: JsonSchema): string {
  const parts: string[] = [];
  if (s.enum) parts.push(s.enum.map((v) => code(String(v))).join(', '));
  if (s.minimum !== undefined) parts.push(`≥ ${s.minimum}`);
  if (s.exclusiveMinimum !== undefined) parts.push(`> ${s.exclusiveMinimum}`);
  if (s.maximum !== undefined && s.maximum < MAX_SAFE) parts.push(`≤ ${s.maximum}`);
  if (s.exclusiveMaximum !== undefined) parts.push(`< ${s.exclusiveMaximum}`);
  if (s.minLength !== undefined) parts.push(`length ≥ ${s.minLength}`);
  if (s.maxLength !== undefined) parts.push(`length ≤ ${s.maxLength}`);
  if (s.minItems !== undefined) parts.push(`≥ ${s.minItems} items`);
  if (s.pattern) parts.push(`matches ${code(s.pattern)}`);
  if (s.type === 'object' && isArtifactRef(s)) parts.push(`{ kind, uri: ${code('cas://sha256/<hex>')}, sha256, bytes }`);
  return parts.join('; ');
}

function defaultOf(s: JsonSchema, required: boolean): string {
  if (s.default === undefined) return required ? '(required)' : '(none)';
  if (typeof s.default === 'object' && s.default !== null && !Array.isArray(s.default) && Object.keys(s.default).length === 0) return '(each field\'s default)';
  return code(JSON.stringify(s.default));
}

/** Flattens a JSON Schema into one row per field, objects and union variants included. */
function collectRows(s: JsonSchema, field: string, required: boolean, out: Row[], inherited: { default?: unknown; description?: string } = {}): void {
  const union = s.anyOf ?? s.oneOf;
  const def = s.default !== undefined ? s.default : inherited.default;
  if (union) {
    const nonNull = union.filter((v) => v.type !== 'null');
    const nullable = nonNull.length < union.length;
    if (nonNull.length === 1) {
      const inner = nonNull[0];
      const [text, unit] = splitUnit(s.description ?? inner.description ?? inherited.description);
      if (inner.type === 'object' && inner.properties && !isArtifactRef(inner)) {
        out.push({ field, type: `object${nullable ? ' | null' : ''}`, default: defaultOf({ ...s, default: def }, required), allowed: '', unit, description: text });
        for (const [k, v] of Object.entries(inner.properties)) collectRows(v, `${field}.${k}`, inner.required?.includes(k) ?? false, out);
        return;
      }
      out.push({ field, type: `${typeOf(inner)}${nullable ? ' | null' : ''}`, default: defaultOf({ ...s, default: def }, required), allowed: allowedOf(inner), unit, description: text });
      return;
    }
    // A discriminated union: one row for the choice, then each variant's fields under "field (kind = x)".
    const kinds = nonNull.map((v) => v.properties?.kind?.const).filter((k) => k !== undefined);
    const [text, unit] = splitUnit(s.description ?? inherited.description);
    out.push({ field, type: `one of ${kinds.length ? 'kind ' + kinds.map((k) => code(String(k))).join(' / ') : 'several shapes'}${nullable ? ' | null' : ''}`, default: defaultOf({ ...s, default: def }, required), allowed: '', unit, description: text });
    for (const v of nonNull) {
      const kind = v.properties?.kind?.const;
      const label = kind !== undefined ? `${field} (kind = ${String(kind)})` : field;
      for (const [k, p] of Object.entries(v.properties ?? {})) {
        if (k === 'kind') {
          const [kt] = splitUnit(p.description);
          out.push({ field: `${label}.kind`, type: typeOf(p), default: '(required)', allowed: '', unit: '', description: kt });
        } else collectRows(p, `${label}.${k}`, v.required?.includes(k) ?? false, out);
      }
    }
    return;
  }
  const [text, unit] = splitUnit(s.description ?? inherited.description);
  if (s.type === 'object' && s.properties && !isArtifactRef(s)) {
    if (field) out.push({ field, type: 'object', default: defaultOf({ ...s, default: def }, required), allowed: '', unit, description: text });
    for (const [k, v] of Object.entries(s.properties)) collectRows(v, field ? `${field}.${k}` : k, s.required?.includes(k) ?? false, out);
    return;
  }
  out.push({ field, type: typeOf(s), default: defaultOf({ ...s, default: def }, required), allowed: allowedOf(s), unit, description: text });
}

function rowsTable(rows: Row[], extra?: { header: string; value: (r: Row) => string }): string[] {
  const head = ['field', 'type', 'default', 'allowed', 'unit', ...(extra ? [extra.header] : []), 'description'];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const cells = [code(r.field), r.type, r.default, r.allowed, r.unit || '—', ...(extra ? [extra.value(r)] : []), r.description || '—'];
    lines.push(`| ${cells.map(cell).join(' | ')} |`);
  }
  return lines;
}

export async function configReference(): Promise<string> {
  const { RunConfigV1 } = await import('../workflows/run-config');
  const { TemporalConfigSchema, ENV_OVERRIDES } = await import('../temporal.config');
  const runRows: Row[] = [];
  collectRows(z.toJSONSchema(RunConfigV1, { io: 'input', unrepresentable: 'any' }) as JsonSchema, '', true, runRows);
  const tRows: Row[] = [];
  collectRows(z.toJSONSchema(TemporalConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema, '', false, tRows);
  const envOf = new Map(Object.entries(ENV_OVERRIDES).map(([env, field]) => [field, env]));
  return [
    '<!-- Generated by scripts/gen-docs.ts from the zod schemas; do not edit by hand. Regenerate: ' + REGENERATE + ' -->',
    '# Configuration reference',
    '',
    'Two configurations: the **run config** (what one run does and how its activities run; a workflow input,',
    'recorded in its history) and the **Temporal and worker config** (where the workers and the CLI connect,',
    'task queues, the local processes; read from environment variables). Every setting has one home: activity',
    'timeouts and retry policies are the run config\'s `execution` block and nothing else (workflow code cannot',
    'read the environment, and a run started with `temporal workflow start` never passes through the CLI).',
    'Every field, its type, default, allowed values, unit and meaning come from the schemas themselves',
    '(`workflows/run-config.ts`, `temporal.config.ts`).',
    '',
    '## Run config, version 1',
    '',
    'A JSON object with `"version": 1`; every field but `version` may be omitted and takes the default below.',
    'The workflow expands the partial config with these defaults once, at its start, and records the result;',
    'a default never changes within a version (a new default means a new version). All fields below exist',
    'since version 1 (a field added later gets, as its default, what the code did before it existed, so older',
    'configs and recorded runs expand to what they ran with). Field names with `(kind = x)` apply when the',
    'union above them has that `kind`.',
    'Cross-field rules: `whale-adaptive` needs `switching.kind` `patience` (and defaults to it);',
    '`whale-fixed` and `prompt-only` need `fixed`; every method but `harness-only` needs',
    '`budget.totalWeightSteps` ≥ 1; `lineage` needs both `model.baseCheckpoint` and `model.baseHarness`;',
    'each `execution.<kind>.maximumInterval` is at least its `initialInterval`.',
    '',
    ...rowsTable(runRows),
    '',
    '## Temporal and worker config',
    '',
    'Not a file: the defaults below, overridden by the environment variables named in the table (the only',
    'way to set them). Read by the workers and the CLI only, never by workflows; it holds no activity timeouts',
    'or retry policies (the run config\'s `execution` block does).',
    '',
    ...rowsTable(tRows, { header: 'environment', value: (r) => (envOf.has(r.field) ? code(envOf.get(r.field)!) : '') }),
    '',
  ].join('\n');
}

function optionRow(o: Option): string {
  const def = o.defaultValue === undefined || o.negate ? '' : code(JSON.stringify(o.defaultValue));
  const notes = [o.mandatory ? 'required' : '', o.argChoices ? `one of ${o.argChoices.map(code).join(', ')}` : ''].filter(Boolean).join('; ');
  return `| ${cell(code(o.flags))} | ${cell(o.description ?? '')}${notes ? ` (${notes})` : ''} | ${cell(def)} |`;
}

function argumentText(a: Argument): string {
  const name = `${a.name()}${a.variadic ? '...' : ''}`;
  return a.required ? `<${name}>` : `[${name}]`;
}

function commandSection(cmd: Command, prefix: string, out: string[]): void {
  const name = `${prefix} ${cmd.name()}`.trim();
  const args = cmd.registeredArguments.map(argumentText).join(' ');
  out.push(`## \`${name}${args ? ' ' + args : ''}\``, '');
  if (cmd.description()) out.push(cmd.description(), '');
  if (cmd.aliases().length) out.push(`Aliases: ${cmd.aliases().map(code).join(', ')}`, '');
  const described = cmd.registeredArguments.filter((a) => a.description);
  if (described.length) {
    out.push('| argument | meaning | default |', '|---|---|---|');
    for (const a of described) out.push(`| ${cell(code(argumentText(a)))} | ${cell(a.description)} | ${a.defaultValue === undefined ? '' : cell(code(JSON.stringify(a.defaultValue)))} |`);
    out.push('');
  }
  const options = cmd.options.filter((o) => !o.hidden);
  if (options.length) {
    out.push('| option | meaning | default |', '|---|---|---|', ...options.map(optionRow), '');
  }
  for (const sub of cmd.commands) commandSection(sub, name, out);
}

export async function cliReference(): Promise<string> {
  const { buildProgram } = await import('../cli/main');
  const { ENV_OVERRIDES } = await import('../temporal.config');
  const program = buildProgram();
  const out = [
    '<!-- Generated by scripts/gen-docs.ts from the commander program (cli/main.ts buildProgram()); do not edit by hand. Regenerate: ' + REGENERATE + ' -->',
    '# CLI reference',
    '',
    `\`${program.name()}\`: ${program.description()}. Run it as \`node bin/whale.js <command>\` (or \`npm run whale -- <command>\`).`,
    'Every command connects to the Temporal server and store named by the environment',
    `(${Object.keys(ENV_OVERRIDES).map(code).join(', ')}; see [config.md](config.md)).`,
    'Exit status: 0 on success, 2 for a usage error (a bad argument or run config), 1 for any other failure.',
    '',
    '| command | what it does |',
    '|---|---|',
    ...program.commands.map((c) => `| [\`${c.name()}\`](#${c.name()}) | ${cell(c.description())} |`),
    '',
  ];
  for (const cmd of program.commands) {
    out.push(`<a id="${cmd.name()}"></a>`, '');
    commandSection(cmd, program.name(), out);
  }
  return out.join('\n');
}

export async function generatedDocs(): Promise<{ file: string; content: string }[]> {
  return [{ file: CONFIG_DOC, content: await configReference() }, { file: CLI_DOC, content: await cliReference() }];
}

/** The generated files whose content on disk differs from what the code generates now. */
export async function staleDocs(root = ROOT): Promise<string[]> {
  const stale: string[] = [];
  for (const { file, content } of await generatedDocs()) {
    const p = path.join(root, file);
    if (!existsSync(p) || readFileSync(p, 'utf8') !== content) stale.push(file);
  }
  return stale;
}

async function main(): Promise<void> {
  if (process.argv.includes('--check')) {
    const stale = await staleDocs();
    if (stale.length) {
      process.stderr.write(`out of date: ${stale.join(', ')}; run \`${REGENERATE}\` and commit the result\n`);
      process.exit(1);
    }
    process.stdout.write('reference docs are up to date\n');
    process.exit(0);
  }
  for (const { file, content } of await generatedDocs()) {
    const p = path.join(ROOT, file);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, content);
    process.stdout.write(`wrote ${file} (${content.length} bytes)\n`);
  }
  // The CLI's modules keep handles (gRPC, workers) alive; the work is done.
  process.exit(0);
}

if (require.main === module) {
  main().catch((err: Error) => {
    process.stderr.write(`gen-docs: ${err.message}\n`);
    process.exit(1);
  });
}
