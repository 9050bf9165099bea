// Each worker process loads a domain's synthetic instance once (generation and the BM25 index are not free)
// and reuses it for every activity. A domain is a registry name ('math') or a pinned reference to a user's
// domain folder (file:///folder#sha256=<hash>, see domains/external.ts).
import { getDomain } from '../domains/registry';
import { loadPinnedDomainModule, parseDomainRef } from '../domains/external';
import { readSeedHarness } from '../domains/harnesses';
import type { DomainInstance } from '../domains/types';
import { readFileSync } from 'node:fs';
import { decodeCheckpoint } from '../model';
import { loadBasePolicy } from '../training/base-policy';

export function createDomainCache(): (name: string) => DomainInstance {
  const instances = new Map<string, DomainInstance>();
  return (name) => {
    let inst = instances.get(name);
    if (!inst) {
      inst = parseDomainRef(name) ? loadPinnedDomainModule(name).instance() : getDomain(name).load({ kind: 'synthetic' });
      instances.set(name, inst);
    }
    return inst;
  };
}

/** The domain's seed harness h0 source: a built-in's, or the one a domain folder names. */
export function seedHarnessOf(domain: string): string {
  return parseDomainRef(domain) ? loadPinnedDomainModule(domain).seedHarnessSource() : readSeedHarness(domain);
}

/** The domain's base policy checkpoint bytes: a built-in's committed one, or the one a domain folder names. */
export function basePolicyOf(domain: string): Uint8Array {
  if (!parseDomainRef(domain)) return loadBasePolicy(domain).bytes;
  const m = loadPinnedDomainModule(domain);
  if (m.basePolicyPath === null) return loadBasePolicy((m.module.basePolicy as { builtin: string }).builtin).bytes;
  const bytes = new Uint8Array(readFileSync(m.basePolicyPath));
  decodeCheckpoint(bytes, `base policy ${m.basePolicyPath} of domain ${m.module.name}`);
  return bytes;
}
