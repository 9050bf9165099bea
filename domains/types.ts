// Domain-side types shared by the three task domains: the three data roles (D_weight / D_harness / D_test),
// a loaded domain instance (environment + splits), and the Domain object each domains/<name>/index.ts
// exports. Tasks and environments use the agent loop's contract from agent/environment.ts.
import type { DomainEnvironment, EnvTask, JsonValue } from '../agent/environment';
import type { OnMalformed } from './common/line-loader';

export type { DomainEnvironment, EnvTask, JsonValue };

/** The three disjoint data roles of the WHALE method. */
export type SplitName = 'weight' | 'harness' | 'test';
export const SPLIT_NAMES: readonly SplitName[] = ['weight', 'harness', 'test'];

/** The three splits of one source, each in a fixed order. */
export interface DomainSplits<T> {
  weight: T[];
  harness: T[];
  test: T[];
}

/** Where a domain's tasks come from: its seeded synthetic generator, or real-format files. */
export type DomainSourceSpec =
  | { kind: 'synthetic' }
  | {
      kind: 'files';
      /** Domain-specific file roles, e.g. { questions, corpus } for search QA; see docs/adding-a-domain.md. */
      files: Record<string, string>;
      onMalformed: OnMalformed;
      /** Seed of the split assignment; the default is fixed per domain. */
      splitSeed?: string;
      /** Load at most this many tasks (the first ones in the file), e.g. a subset of the Lichess CSV. */
      maxTasks?: number;
      /** Split sizes; defaults 256 / 256 (small files may need fewer). */
      harnessSize?: number;
      testSize?: number;
    };

/** A loaded domain: the environment the agent loop drives and the three splits of its tasks. */
export interface DomainInstance<Hidden = unknown, State extends JsonValue = JsonValue> {
  environment: DomainEnvironment<Hidden, State>;
  splits: DomainSplits<EnvTask<Hidden>>;
  /** Lookup by task id (prompt ids in trajectories and activity results). */
  taskById(id: string): EnvTask<Hidden> | undefined;
  /** Human-readable loader summaries, including every skipped malformed line ("file:line reason"). */
  loadReport: string[];
  /**
   * Host-side diagnostics of a finished episode for reports and archive summaries (e.g. search QA:
   * whether any retrieved passage contained the answer, the paper's "retrieval hit rate"). May read the
   * hidden reference, so publish aggregates only, never per-task values to a proposer.
   */
  diagnose(task: EnvTask<Hidden>, finalState: State): Record<string, number | boolean>;
}

export interface Domain<Hidden = unknown, State extends JsonValue = JsonValue> {
  /** Registry name: 'search-qa' | 'math' | 'chess' | a user's own. */
  readonly name: string;
  readonly description: string;
  /** File roles `load({ kind: 'files' })` expects, with one line each. */
  readonly fileRoles: Record<string, string>;
  /** Builds the instance for a source. Synthetic instances are deterministic (fixed seeds). */
  load(source: DomainSourceSpec): DomainInstance<Hidden, State>;
}

/** A verifier's verdict with a short reason (for unit tests and reports); the loop uses only the reward. */
export interface Verdict {
  reward: 0 | 1;
  reason: string;
}
