// Seed harnesses (h0) of the built-in domains: the incoming harness of the first harness phase. They are
// TypeScript source files read as text, because the sandbox compiles harness source, never imports it.
// The stronger reference harnesses are NOT listed here (see reference-harnesses.ts): this module is
// what a proposer's catalogue may draw from.
import { join } from 'node:path';
import { readTextFile } from './common/line-loader';
import type { BuiltinDomainName } from './registry';

export const SEED_HARNESS_FILES: Readonly<Record<BuiltinDomainName, string>> = {
  'search-qa': join(__dirname, 'search-qa', 'harnesses', 'h0.ts'),
  math: join(__dirname, 'math', 'harnesses', 'h0.ts'),
  chess: join(__dirname, 'chess', 'harnesses', 'h0.ts'),
};

function isBuiltin(name: string): name is BuiltinDomainName {
  return Object.prototype.hasOwnProperty.call(SEED_HARNESS_FILES, name);
}

/** The h0 source of a built-in domain (a user's own domain brings its own h0 file). */
export function readSeedHarness(domain: string): string {
  if (!isBuiltin(domain)) throw new Error(`no seed harness for domain "${domain}"; built-in domains: ${Object.keys(SEED_HARNESS_FILES).join(', ')} (pass your own h0 file for other domains)`);
  return readTextFile(SEED_HARNESS_FILES[domain]);
}
