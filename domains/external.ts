// Bring-your-own-domain: a domain that lives in the user's own folder, outside this project, loaded by
// path. The folder's module exports a `DomainModule` (validated with zod at load time); a run names it by a
// pinned reference `file:///abs/folder#sha256=<content hash>` so every worker loads the same bytes and the
// workflow history records which domain ran. See docs/bring-your-own-domain.md.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import type { DomainEnvironment, DomainInstance, EnvTask, JsonValue } from './types';
import { buildInstance } from './common/instance';
import { DEFAULT_SPLIT_SIZES } from './common/splits';
import { WhaleError } from '../common/errors';

/** The contract a domain folder's module exports (default export or `module.exports`). */
export interface DomainModule<Hidden = unknown, State extends JsonValue = JsonValue> {
  /** The contract version this module was written for (this release reads 1). */
  apiVersion: 1;
  /** Short lowercase name for people, ids and logs (`[a-z][a-z0-9-]*`); the path identifies the domain. */
  name: string;
  description: string;
  /** The environment the agent loop drives: tools, transitions, normaliser, verifier (agent/environment.ts). */
  environment: DomainEnvironment<Hidden, State>;
  /** Every task of the domain's source, deterministic (no clocks, no unseeded randomness). */
  tasks(): EnvTask<Hidden>[];
  /** Seed of the split assignment (whole items ranked by sha256(seed + itemId)). */
  splitSeed: string;
  /** D_harness / D_test sizes (default 256 / 256); the rest is D_weight. */
  splitSizes?: { harness: number; test: number };
  /** The seed harness h0: a harness source file, relative to the domain folder. */
  seedHarness: string;
  /** Start weights: a built-in domain's committed base policy, or a checkpoint file in the folder. */
  basePolicy: { builtin: 'math' | 'search-qa' | 'chess' } | { checkpoint: string };
  /** Optional: a task from free text (`whale agent run <bundle> "<text>"`); `hidden` may be null then. */
  taskFromText?(text: string): EnvTask<Hidden>;
  /** Optional host-side diagnostics of a finished episode (aggregates only, see domains/types.ts). */
  diagnose?(task: EnvTask<Hidden>, finalState: State): Record<string, number | boolean>;
}

/** Identity function that gives a domain module its type (the module needs no runtime import of it). */
export function defineDomainModule<Hidden, State extends JsonValue>(m: DomainModule<Hidden, State>): DomainModule<Hidden, State> {
  return m;
}

const Fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', { message: 'must be a function' });
const ToolSpecSchema = z.object({
  name: z.string().regex(/^[a-z][a-z0-9_]*$/, 'a tool name is lowercase letters, digits and _, starting with a letter').refine((n) => n !== 'answer', '"answer" is reserved'),
  description: z.string().min(1),
  params: z.record(z.string(), z.object({ description: z.string(), kind: z.literal('int'), min: z.number().int(), max: z.number().int(), default: z.number().int() })),
});
// Validation only: the parsed copy is thrown away (zod would strip methods the module defines beyond these).
const DomainModuleSchema = z.object({
  apiVersion: z.literal(1, { message: 'apiVersion must be 1 (the contract this release reads)' }),
  name: z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, 'name must be lowercase letters, digits and -, starting with a letter'),
  description: z.string().min(1),
  environment: z.object({
    domain: z.string().min(1),
    tools: z.array(ToolSpecSchema),
    answerKind: z.enum(['answer', 'move']),
    initialState: Fn, observe: Fn, executeTool: Fn, submit: Fn, normalizeAnswer: Fn, verify: Fn,
  }),
  tasks: Fn,
  splitSeed: z.string().min(1),
  splitSizes: z.object({ harness: z.number().int().positive(), test: z.number().int().positive() }).optional(),
  seedHarness: z.string().min(1),
  basePolicy: z.union([z.strictObject({ builtin: z.enum(['math', 'search-qa', 'chess']) }), z.strictObject({ checkpoint: z.string().min(1) })]),
  taskFromText: Fn.optional(),
  diagnose: Fn.optional(),
});
const TaskSchema = z.object({ id: z.string().min(1), itemId: z.string().min(1), question: z.string(), view: z.record(z.string(), z.unknown()) });

/** A user or config error about a domain module: the message names the folder and what to fix. */
export class DomainModuleError extends WhaleError {
  override name = 'DomainModuleError';
  readonly fault = 'user-input';
}

export interface DomainRef {
  /** Absolute path of the domain folder. */
  dir: string;
  /** The pinned content hash, or null when the reference does not pin one. */
  sha256: string | null;
}

/** True for a domain reference (`file:` URL or a path); false for a registry name such as 'math' (never has a '/'). */
export function isDomainPath(value: string): boolean {
  return value.startsWith('file:') || value.includes('/') || value.includes(path.sep) || value === '.' || value === '..';
}

/** Parses `file:///abs#sha256=<hex>`; null for a registry name. Relative paths need `resolveDomainArgument`. */
export function parseDomainRef(value: string): DomainRef | null {
  if (!value.startsWith('file:')) return null;
  const [url, fragment = ''] = value.split('#', 2);
  let dir: string;
  try {
    dir = fileURLToPath(url);
  } catch (err) {
    throw new DomainModuleError(`domain reference ${JSON.stringify(value)} is not a file URL (${(err as Error).message}); use file:///absolute/folder#sha256=<hex> or start the run with \`whale run\`, which pins it`);
  }
  const m = /^sha256=([0-9a-f]{64})$/.exec(fragment);
  if (fragment !== '' && !m) throw new DomainModuleError(`domain reference ${JSON.stringify(value)}: the part after # must be sha256=<64 lowercase hex digits>`);
  return { dir: path.resolve(dir), sha256: m ? m[1] : null };
}

export function formatDomainRef(dir: string, sha256: string): string {
  return `${pathToFileURL(path.resolve(dir)).href}#sha256=${sha256}`;
}

/** A short label for ids and tables: the registry name, or the folder name of a reference. */
export function domainLabel(domain: string): string {
  const ref = parseDomainRef(domain);
  return ref ? path.basename(ref.dir) : domain;
}

const SKIPPED = new Set(['node_modules', '.git']);

/** The files that make up a domain folder (sorted, relative, '/'-separated; dot files and node_modules skipped). */
export function domainFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      if (entry.name.startsWith('.') || SKIPPED.has(entry.name)) continue;
      const r = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(r);
      else if (entry.isFile()) out.push(r);
    }
  };
  walk('');
  return out.sort();
}

/** Content hash of a domain folder: sha256 over each file's relative path and sha256, in sorted order. */
export function hashDomainFolder(dir: string): string {
  const h = createHash('sha256');
  for (const rel of domainFiles(dir)) {
    h.update(`${rel}\u0000${createHash('sha256').update(readFileSync(path.join(dir, rel))).digest('hex')}\n`);
  }
  return h.digest('hex');
}

/** A validated, loaded domain module with its identity. */
export interface LoadedDomainModule {
  module: DomainModule;
  dir: string;
  sha256: string;
  ref: string;
  /** The instance (tasks split into D_weight / D_harness / D_test), built once. */
  instance(): DomainInstance;
  seedHarnessSource(): string;
  /** The seed harness file's absolute path (inside the folder, so the content hash covers it). */
  seedHarnessPath: string;
  /** Absolute path of the checkpoint file, when the module brings its own base policy. */
  basePolicyPath: string | null;
}

const loaded = new Map<string, LoadedDomainModule>();

function describeIssues(error: z.ZodError): string {
  return error.issues.slice(0, 30).map((i) => `  - ${i.path.length ? i.path.join('.') : '(export)'}: ${i.message}`).join('\n');
}

function insideFolder(dir: string, rel: string, what: string): string {
  const abs = path.resolve(dir, rel);
  if (path.relative(dir, abs).startsWith('..') || path.isAbsolute(path.relative(dir, abs))) {
    throw new DomainModuleError(`domain ${dir}: ${what} ${JSON.stringify(rel)} must be inside the domain folder (its content hash covers only that folder)`);
  }
  if (!existsSync(abs) || !statSync(abs).isFile()) throw new DomainModuleError(`domain ${dir}: ${what} ${JSON.stringify(rel)} (${abs}) does not exist`);
  return abs;
}

/**
 * Loads a domain folder by reference or absolute path: checks the pinned hash (if any), requires the module
 * (TypeScript runs through tsx, which the CLI and workers register), validates its export and its tasks.
 * Cached per (folder, hash) in this process.
 */
export function loadDomainModule(refOrDir: string): LoadedDomainModule {
  const ref = parseDomainRef(refOrDir) ?? { dir: path.resolve(refOrDir), sha256: null };
  const dir = ref.dir;
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new DomainModuleError(`domain folder ${dir} does not exist (or is not a folder) on this machine: every worker needs the same folder at the same path (a shared filesystem), or run the workers where it is`);
  }
  const sha256 = hashDomainFolder(dir);
  if (ref.sha256 !== null && ref.sha256 !== sha256) {
    throw new DomainModuleError(`domain folder ${dir} has content hash ${sha256}, but the run pinned ${ref.sha256}: the folder changed since the run started; restore it (or start a new run on the changed domain)`);
  }
  const key = `${dir}#${sha256}`;
  const cached = loaded.get(key);
  if (cached) return cached;

  // A folder that changed since it was required in this process must be required afresh.
  for (const id of Object.keys(require.cache)) if (id.startsWith(dir + path.sep)) delete require.cache[id];
  let exported: unknown;
  try {
    const required = require(dir) as { default?: unknown };
    exported = required && typeof required === 'object' && 'default' in required && required.default !== undefined ? required.default : required;
  } catch (err) {
    throw new DomainModuleError(`domain folder ${dir} failed to load (it needs an index.ts/index.js or a package.json "main"): ${(err as Error).message}`);
  }
  const parsed = DomainModuleSchema.safeParse(exported);
  if (!parsed.success) {
    throw new DomainModuleError(`domain folder ${dir} does not export a valid domain module (see docs/bring-your-own-domain.md):\n${describeIssues(parsed.error)}`);
  }
  const module = exported as DomainModule;
  const seedHarnessPath = insideFolder(dir, module.seedHarness, 'seedHarness');
  const basePolicyPath = 'checkpoint' in module.basePolicy ? insideFolder(dir, module.basePolicy.checkpoint, 'basePolicy.checkpoint') : null;
  let instance: DomainInstance | null = null;
  const entry: LoadedDomainModule = {
    module, dir, sha256, ref: formatDomainRef(dir, sha256), seedHarnessPath, basePolicyPath,
    instance: () => (instance ??= buildModuleInstance(module, dir)),
    seedHarnessSource: () => readFileSync(seedHarnessPath, 'utf8'),
  };
  loaded.set(key, entry);
  return entry;
}

function buildModuleInstance(module: DomainModule, dir: string): DomainInstance {
  let tasks: EnvTask[];
  try {
    tasks = module.tasks();
  } catch (err) {
    throw new DomainModuleError(`domain ${module.name} (${dir}): tasks() threw: ${(err as Error).message}`);
  }
  if (!Array.isArray(tasks)) throw new DomainModuleError(`domain ${module.name} (${dir}): tasks() must return an array of tasks`);
  for (const [i, t] of tasks.entries()) {
    const p = TaskSchema.safeParse(t);
    if (!p.success) throw new DomainModuleError(`domain ${module.name} (${dir}): task ${i} is not a valid task ({id, itemId, question, view, hidden}):\n${describeIssues(p.error)}`);
  }
  const sizes = module.splitSizes ?? DEFAULT_SPLIT_SIZES;
  try {
    return buildInstance(module.environment, tasks, module.splitSeed, sizes, [`${module.name}: ${tasks.length} tasks from ${dir}`], module.diagnose ?? (() => ({})));
  } catch (err) {
    throw new DomainModuleError(`domain ${module.name} (${dir}): ${(err as Error).message}`);
  }
}

/** The module of a run's domain reference, which must pin its content hash (workers load only pinned domains). */
export function loadPinnedDomainModule(domain: string): LoadedDomainModule {
  const ref = parseDomainRef(domain);
  if (!ref || ref.sha256 === null) {
    throw new DomainModuleError(`domain ${JSON.stringify(domain)} is not a pinned domain reference: start the run with \`whale run\` / \`whale start\` (they pin a folder path as file:///folder#sha256=<hash>), or pin it yourself with the hash \`whale domain check <folder>\` prints`);
  }
  return loadDomainModule(domain);
}

/**
 * What the CLI does with a run config's `domain`: a registry name stays as it is; a path (relative to
 * `baseDir`) or an unpinned file URL becomes a pinned reference after the module loads and validates.
 */
export function resolveDomainArgument(value: string, baseDir: string): string {
  if (!isDomainPath(value)) return value;
  const ref = parseDomainRef(value);
  const dir = ref ? ref.dir : path.resolve(baseDir, value);
  const m = loadDomainModule(ref?.sha256 ? value : dir);
  m.instance();
  return m.ref;
}
