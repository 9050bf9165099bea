// The domain registry: names used in run configs ('search-qa', 'math', 'chess') mapped to Domain objects.
// Users add their own domain by implementing `Domain` (see docs/adding-a-domain.md) and passing it here, or
// without touching the project, as a folder a run names by path (domains/external.ts, docs/bring-your-own-domain.md).
import { chessDomain } from './chess';
import { mathDomain } from './math';
import { searchQaDomain } from './search-qa';
import type { Domain } from './types';

export const DOMAINS: Readonly<Record<string, Domain>> = {
  'search-qa': searchQaDomain,
  math: mathDomain,
  chess: chessDomain,
};

export type BuiltinDomainName = 'search-qa' | 'math' | 'chess';

/** The domain registered under `name`, or an error listing the known names. */
export function getDomain(name: string, extra: Readonly<Record<string, Domain>> = {}): Domain {
  const all = { ...DOMAINS, ...extra };
  const d = all[name];
  if (!d) throw new Error(`unknown domain "${name}"; known domains: ${Object.keys(all).join(', ')}`);
  return d;
}
