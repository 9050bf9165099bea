// Each worker process loads a domain's synthetic instance once (generation and the BM25 index are not free)
// and reuses it for every activity.
import { getDomain } from '../domains/registry';
import type { DomainInstance } from '../domains/types';

export function createDomainCache(): (name: string) => DomainInstance {
  const instances = new Map<string, DomainInstance>();
  return (name) => {
    let inst = instances.get(name);
    if (!inst) {
      inst = getDomain(name).load({ kind: 'synthetic' });
      instances.set(name, inst);
    }
    return inst;
  };
}
