// What of an agent bundle is code, and when it may run: a built-in domain only from this project, a
// bundle's own domain/ folder only with the user's --trust-bundle-code and after its content hash is printed,
// and nothing Node could load from the bundle outside that hash (docs/agent-bundle.md).
import { lstatSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { formatDomainRef } from '../domains/external';
import { DOMAINS } from '../domains/registry';
import { WhaleError } from '../common/errors';

/** A user error about a bundle or a run to export: the message says what to fix. */
export class AgentBundleError extends WhaleError {
  override name = 'AgentBundleError';
  readonly fault = 'user-input';
}

/** A bundle names a built-in domain; its code comes from this project only, never from a path in the manifest. */
export function checkBuiltinDomain(bundleDir: string, ref: string): void {
  if (!Object.hasOwn(DOMAINS, ref)) {
    throw new AgentBundleError(`bundle ${bundleDir}: the manifest says domain kind "builtin" with ref ${JSON.stringify(ref)}, which is not a built-in domain (${Object.keys(DOMAINS).join(', ')}): built-in domains load only from this project, never from a path a bundle names; a bundle that brings its own domain code has kind "folder" and a domain/ folder, and runs only with --trust-bundle-code`);
  }
}

/** The entries a bundle holds; a bundle with domain code may hold nothing else (see `checkCodeIsHashed`). */
const BUNDLE_ENTRIES = new Set(['manifest.json', 'checkpoint.ckpt', 'harness.ts', 'domain', 'hf']);

/**
 * A bundle's domain code is trusted by its content hash, so everything Node could load from the bundle must
 * be inside that hash: `domainFiles` leaves out dot files, node_modules and links, and a package.json or
 * node_modules beside `domain/` would be resolved by `require` too. Such entries are refused, not skipped.
 */
export function checkCodeIsHashed(abs: string): void {
  const extra = readdirSync(abs).filter((name) => !BUNDLE_ENTRIES.has(name));
  if (extra.length) {
    throw new AgentBundleError(`bundle ${abs} brings domain code and also holds ${extra.slice(0, 5).map((n) => JSON.stringify(n)).join(', ')}: a bundle with a domain/ folder may hold only ${[...BUNDLE_ENTRIES].join(', ')} (anything else could be loaded beside the hashed code); remove it or export the bundle again`);
  }
  const walk = (rel: string): void => {
    for (const entry of readdirSync(path.join(abs, rel), { withFileTypes: true })) {
      const r = `${rel}/${entry.name}`;
      const outside = entry.name.startsWith('.') || entry.name === 'node_modules' || !(entry.isFile() || entry.isDirectory());
      if (outside) throw new AgentBundleError(`bundle ${abs}: ${r} is not covered by the domain's content hash (dot files, node_modules and links are left out of it, yet Node could load them): remove it or export the bundle again`);
      if (entry.isDirectory()) walk(r);
    }
  };
  if (lstatSync(path.join(abs, 'domain')).isSymbolicLink()) throw new AgentBundleError(`bundle ${abs}: domain/ is a link; a bundle's domain folder must be a real folder inside it`);
  walk('domain');
}

/** How a caller lets a bundle's own domain code run: the user's explicit flag, and where to say what runs. */
export interface BundleCodeTrust {
  /** `--trust-bundle-code` was given. */
  trusted: boolean;
  /** Told the folder and content hash of the code before it runs. */
  notice: (line: string) => void;
}

/**
 * The run config `domain` value that runs this bundle's domain: a built-in name, or (only when the user
 * trusts the bundle's code) a reference pinning the bundle's `domain/` copy by its content hash. A domain
 * folder is code that runs in the process that loads it, with the user's rights and outside any sandbox.
 */
export function bundleDomain(bundle: { dir: string; builtinDomain: string | null; domainCode: { dir: string; sha256: string } | null }, trust: BundleCodeTrust): string {
  if (bundle.builtinDomain !== null) return bundle.builtinDomain;
  const code = bundle.domainCode!;
  if (!trust.trusted) {
    throw new AgentBundleError(`bundle ${bundle.dir} brings its own domain code (${code.dir}, content hash sha256 ${code.sha256}): running it runs that code on this machine with your rights, outside any sandbox. Read it first; to run it, pass --trust-bundle-code (only for a bundle whose source you trust)`);
  }
  trust.notice(`whale: running the bundle's own domain code ${code.dir} (content hash sha256 ${code.sha256}), trusted by --trust-bundle-code`);
  return formatDomainRef(code.dir, code.sha256);
}
