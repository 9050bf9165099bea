// The pre-built workflow bundle: one webpack build per content hash of the workflow sources, written by
// set-up (scripts/bundle-workflows.ts) to .data/workflow-bundle/<hash>.js and loaded by every orchestration
// worker through `workflowBundle: { codePath }`; the hash doubles as the Worker Versioning build id.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
export const WORKFLOWS_PATH = path.join(ROOT, 'workflows', 'index.ts');
export const BUNDLE_DIR = path.join(ROOT, '.data', 'workflow-bundle');
/** Bundles kept beside the current one (a worker of the previous version may restart from its checkout's bundle). */
const KEEP = 5;

/** Relative import specifiers of a source file (value and type imports alike: conservative). */
function relativeImports(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/(?:from\s+|import\s*\(\s*|require\s*\(\s*|import\s+)['"]([^'"]+)['"]/g)) out.push(m[1]);
  return out;
}

function resolveSource(fromFile: string, spec: string, root: string): string {
  const base = path.resolve(path.dirname(fromFile), spec);
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  throw new Error(`${path.relative(root, fromFile)} imports '${spec}', which resolves to no file: fix the import before bundling the workflows`);
}

function packageVersion(name: string): string {
  const file = require.resolve(`${name}/package.json`, { paths: [ROOT] });
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/**
 * The content hash of what goes into the bundle: every project file reachable by import from
 * workflows/index.ts (path and bytes), the versions of the packages they import, and the version of the
 * bundler (@temporalio/worker), which must match the worker that loads the bundle. 16 hex digits.
 */
export function workflowSourcesHash(entry = WORKFLOWS_PATH, root = ROOT): { hash: string; files: string[] } {
  const seen = new Set<string>();
  const packages = new Set<string>(['@temporalio/worker']);
  const queue = [entry];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of relativeImports(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) queue.push(resolveSource(file, spec, root));
      else if (!spec.startsWith('node:')) packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
    }
  }
  const files = [...seen].map((f) => path.relative(root, f)).sort();
  const h = createHash('sha256');
  for (const f of files) h.update(`${f}\0`).update(readFileSync(path.join(root, f))).update('\0');
  for (const p of [...packages].sort()) h.update(`${p}@${packageVersion(p)}\0`);
  return { hash: h.digest('hex').slice(0, 16), files };
}

export function bundlePath(hash: string, dir = BUNDLE_DIR): string {
  return path.join(dir, `${hash}.js`);
}

export interface BuiltBundle {
  hash: string;
  codePath: string;
  /** False when a bundle for this hash was already there. */
  built: boolean;
  ms: number;
}

/** Builds the bundle for the current sources unless it exists; written atomically (temporary file, rename). */
export async function buildWorkflowBundle(dir = BUNDLE_DIR): Promise<BuiltBundle> {
  const t0 = performance.now();
  const { hash } = workflowSourcesHash();
  const codePath = bundlePath(hash, dir);
  if (existsSync(codePath)) return { hash, codePath, built: false, ms: performance.now() - t0 };
  // Loaded here only: webpack is heavy, and a worker with a current bundle never needs it.
  const { bundleWorkflowCode } = require('@temporalio/worker') as typeof import('@temporalio/worker');
  const noop = () => undefined;
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: { trace: noop, debug: noop, info: noop, warn: (m: string) => process.stderr.write(`[whale] bundler: ${m}\n`), error: (m: string) => process.stderr.write(`[whale] bundler: ${m}\n`), log: noop },
  });
  // Sources edited while webpack ran: the code would not match its name.
  if (workflowSourcesHash().hash !== hash) throw new Error('the workflow sources changed while they were being bundled: run the bundling again');
  mkdirSync(dir, { recursive: true });
  const tmp = `${codePath}.${process.pid}.tmp`;
  writeFileSync(tmp, code);
  renameSync(tmp, codePath);
  pruneBundles(dir, hash);
  return { hash, codePath, built: true, ms: performance.now() - t0 };
}

function pruneBundles(dir: string, current: string): void {
  const bundles = readdirSync(dir).filter((f) => /^[0-9a-f]{16}\.js$/.test(f) && f !== `${current}.js`)
    .map((f) => ({ f, t: statSync(path.join(dir, f)).mtimeMs })).sort((a, b) => b.t - a.t);
  for (const { f } of bundles.slice(KEEP)) rmSync(path.join(dir, f), { force: true });
}

/** What a worker does when no bundle matches the current sources: build one (default) or refuse. */
export type StaleBundlePolicy = 'rebuild' | 'refuse';

/**
 * The bundle an orchestration worker loads: the pre-built one for the current sources' hash; when the
 * sources changed since set-up, rebuilt (saying so) or refused with the command that builds it.
 */
export async function resolveWorkflowBundle(policy: StaleBundlePolicy, log: (line: string) => void, dir = BUNDLE_DIR): Promise<BuiltBundle> {
  const { hash } = workflowSourcesHash();
  const codePath = bundlePath(hash, dir);
  if (existsSync(codePath)) return { hash, codePath, built: false, ms: 0 };
  if (policy === 'refuse') {
    throw new Error(`no pre-built workflow bundle for the current workflow sources (hash ${hash}; ${path.relative(ROOT, codePath)} is missing): the workflow code changed since set-up. Build it with \`node --import tsx scripts/bundle-workflows.ts\` (or \`bash scripts/setup.sh\`), or unset WHALE_WORKFLOW_BUNDLE=prebuilt to let the worker build it at start`);
  }
  log(`[whale] the workflow sources changed since the bundle was built (no ${path.relative(ROOT, codePath)}): building it now`);
  const built = await buildWorkflowBundle(dir);
  log(`[whale] workflow bundle ${built.hash} built in ${(built.ms / 1000).toFixed(1)} s`);
  return built;
}
