// Builds a DomainInstance from an environment and a task list: split assignment, id lookup, and the
// checks every source must pass (unique ids, required file roles) with errors that say what to fix.
import type { DomainEnvironment, DomainInstance, DomainSourceSpec, EnvTask, JsonValue } from '../types';
import { assignSplits, DEFAULT_SPLIT_SIZES, type SplitSizes } from './splits';

export function buildInstance<Hidden, State extends JsonValue>(
  environment: DomainEnvironment<Hidden, State>,
  tasks: readonly EnvTask<Hidden>[],
  splitSeed: string,
  sizes: SplitSizes,
  loadReport: string[],
  diagnose: (task: EnvTask<Hidden>, finalState: State) => Record<string, number | boolean>,
): DomainInstance<Hidden, State> {
  const splits = assignSplits(tasks, splitSeed, sizes);
  const byId = new Map<string, EnvTask<Hidden>>();
  for (const t of tasks) byId.set(t.id, t);
  return { environment, splits, taskById: (id) => byId.get(id), loadReport, diagnose };
}

/** Split sizes of a file source: its overrides, else 256 / 256. */
export function sizesOf(source: DomainSourceSpec): SplitSizes {
  if (source.kind !== 'files') return DEFAULT_SPLIT_SIZES;
  return { harness: source.harnessSize ?? DEFAULT_SPLIT_SIZES.harness, test: source.testSize ?? DEFAULT_SPLIT_SIZES.test };
}

/** The path of a required file role, or an error listing the roles the domain expects. */
export function requireFile(domain: string, files: Record<string, string>, role: string, roles: Record<string, string>): string {
  const path = files[role];
  if (typeof path !== 'string' || path === '') {
    const expected = Object.entries(roles).map(([r, d]) => `${r} (${d})`).join(', ');
    throw new Error(`${domain}: missing file role "${role}"; a files source for ${domain} needs: ${expected}`);
  }
  return path;
}

/** Memoises a zero-argument builder (synthetic instances are deterministic and costly to rebuild). */
export function once<T>(build: () => T): () => T {
  let value: T | undefined;
  let built = false;
  return () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value as T;
  };
}
