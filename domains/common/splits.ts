// Split assignment shared by every domain: D_test and D_harness (256 tasks each by default) and D_weight
// (the rest), disjoint by underlying item, stable across runs and independent of the order a source
// yields its tasks in (keys are ranked by a seeded hash, not by position).
import type { DomainSplits, EnvTask } from '../types';
import { sha256Hex } from '../../common/hash';

export interface SplitSizes {
  harness: number;
  test: number;
}
export const DEFAULT_SPLIT_SIZES: SplitSizes = { harness: 256, test: 256 };

/**
 * Groups tasks by `itemKey`, ranks groups by sha256(seed + key), then fills D_test, then D_harness,
 * with whole groups (a group that would overflow a split is deferred to the next split), and gives
 * everything left to D_weight. Within a split, tasks keep the ranked order (by id inside a group), so
 * the result does not depend on the order the source yielded its tasks in.
 */
export function assignSplits<Ref>(
  tasks: readonly EnvTask<Ref>[],
  seed: string,
  sizes: SplitSizes = DEFAULT_SPLIT_SIZES,
): DomainSplits<EnvTask<Ref>> {
  const groups = new Map<string, EnvTask<Ref>[]>();
  const ids = new Set<string>();
  for (const t of tasks) {
    if (ids.has(t.id)) throw new Error(`assignSplits: duplicate task id "${t.id}"; task ids must be unique within a source`);
    ids.add(t.id);
    const g = groups.get(t.itemId);
    if (g) g.push(t);
    else groups.set(t.itemId, [t]);
  }
  if (tasks.length < sizes.harness + sizes.test + 1) {
    throw new Error(
      `assignSplits: ${tasks.length} tasks cannot fill D_test (${sizes.test}) + D_harness (${sizes.harness}) and leave any D_weight; supply more tasks or smaller split sizes`,
    );
  }
  const ranked = [...groups.entries()]
    .map(([key, members]) => ({ rank: sha256Hex(`${seed}\u0000${key}`), members: members.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) }))
    .sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
  const out: DomainSplits<EnvTask<Ref>> = { weight: [], harness: [], test: [] };
  for (const { members } of ranked) {
    if (out.test.length + members.length <= sizes.test) out.test.push(...members);
    else if (out.harness.length + members.length <= sizes.harness) out.harness.push(...members);
    else out.weight.push(...members);
  }
  if (out.test.length !== sizes.test || out.harness.length !== sizes.harness) {
    throw new Error(
      `assignSplits: could only fill D_test=${out.test.length}/${sizes.test}, D_harness=${out.harness.length}/${sizes.harness} with whole item groups; use smaller groups or sizes`,
    );
  }
  return out;
}

/** Content hash of a split: ids, item keys, questions and references in split order. */
export function hashSplit<Ref>(tasks: readonly EnvTask<Ref>[]): string {
  return sha256Hex(JSON.stringify(tasks.map((t) => [t.id, t.itemId, t.question, t.view, t.hidden])));
}

/** True when no item key occurs in two splits. */
export function splitsAreDisjoint<Ref>(splits: DomainSplits<EnvTask<Ref>>): boolean {
  const owner = new Map<string, string>();
  for (const name of ['weight', 'harness', 'test'] as const) {
    for (const t of splits[name]) {
      const prev = owner.get(t.itemId);
      if (prev !== undefined && prev !== name) return false;
      owner.set(t.itemId, name);
    }
  }
  return true;
}
