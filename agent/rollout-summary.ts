// Summary numbers of a set of trajectories, as harness scoring, RSFT step logs and test evaluation
// report them: success rate, mean turns (the frontier's tie-breaker), tokens, how episodes ended.

import type { EpisodeStopReason, Trajectory } from './trajectory';

export interface RolloutSummary {
  episodes: number;
  /** Mean reward (rewards are 0/1). 0 for an empty set. */
  successRate: number;
  /** Mean number of model calls per episode. */
  meanTurns: number;
  meanGeneratedTokens: number;
  /** Share of episodes with at least one format error (no parseable action in some turn). */
  formatErrorRate: number;
  /** Distinct task ids with at least one rewarded episode (RSFT's "distinct accepted prompts"). */
  distinctSolvedTasks: number;
  stopReasons: Partial<Record<EpisodeStopReason, number>>;
  /** Harness failures by kind (timeout, memory-limit, ...). */
  harnessFailures: Record<string, number>;
}

export function summarizeRollouts(trajectories: readonly Trajectory[]): RolloutSummary {
  const n = trajectories.length;
  const mean = (f: (t: Trajectory) => number) => (n === 0 ? 0 : trajectories.reduce((a, t) => a + f(t), 0) / n);
  const stopReasons: Partial<Record<EpisodeStopReason, number>> = {};
  const harnessFailures: Record<string, number> = {};
  for (const t of trajectories) {
    stopReasons[t.stopReason] = (stopReasons[t.stopReason] ?? 0) + 1;
    if (t.harnessFailure) harnessFailures[t.harnessFailure.kind] = (harnessFailures[t.harnessFailure.kind] ?? 0) + 1;
  }
  return {
    episodes: n,
    successRate: mean((t) => t.reward),
    meanTurns: mean((t) => t.modelCalls.length),
    meanGeneratedTokens: mean((t) => t.tokenCounts.generated),
    formatErrorRate: mean((t) => (t.turns.some((turn) => turn.action.kind === 'none') ? 1 : 0)),
    distinctSolvedTasks: new Set(trajectories.filter((t) => t.reward > 0).map((t) => t.taskId)).size,
    stopReasons,
    harnessFailures,
  };
}
