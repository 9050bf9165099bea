// The comparison's statistics: mean ± std over seeds per (domain, method), the weights-only peak per domain,
// the rollouts each method needs to reach it, and each run's protocol and budget use.
import type { RunResult } from './compare-history';

/** A run's comparison protocol: 'none' for a run from before the field (it ran under what is now 'none'). */
export function runProtocol(r: RunResult): string {
  return r.budget?.protocol ?? 'none';
}

export function meanStd(xs: number[]): { mean: number; std: number; n: number } | null {
  if (xs.length === 0) return null;
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const std = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1)) : 0;
  return { mean, std, n: xs.length };
}

/** Median, least and greatest: a spread that one run slowed by sharing the machine does not drag. */
export function medianRange(xs: number[]): { median: number; min: number; max: number } | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return { median: s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2, min: s[0], max: s[s.length - 1] };
}

export interface TableRow {
  domain: string;
  method: string;
  seeds: number;
  best: ReturnType<typeof meanStd>;
  final: ReturnType<typeof meanStd>;
  rolloutsUsed: ReturnType<typeof meanStd>;
  /** Rollouts until the first test evaluation at or above the domain's weights-only peak (seeds that reached it). */
  toPeak: ReturnType<typeof meanStd>;
  reachedPeak: number;
  wallSeconds: ReturnType<typeof meanStd>;
  /** Wall time per run as median (least-greatest) over seeds: the table's figure for one run of the method. */
  wallRange: ReturnType<typeof medianRange>;
  /** The protocols its runs ran under ('none' for runs from before the field), sorted. */
  protocols: string[];
  /** Runs held to a rollout cap (maxRollouts) and how many stayed within it. */
  budgeted: number;
  withinBudget: number;
}

/** Aggregates results per (domain, method). The weights-only peak is the mean over seeds of its best mean@8. */
export function aggregate(results: RunResult[], methods: string[], domains: string[]): { rows: TableRow[]; peaks: Record<string, number | null> } {
  const rows: TableRow[] = [];
  const peaks: Record<string, number | null> = {};
  for (const domain of domains) {
    const wo = results.filter((r) => r.domain === domain && r.method === 'weights-only' && r.bestMeanAt8 !== null);
    const peak = meanStd(wo.map((r) => r.bestMeanAt8!))?.mean ?? null;
    peaks[domain] = peak;
    for (const method of methods) {
      const rs = results.filter((r) => r.domain === domain && r.method === method);
      if (rs.length === 0) continue;
      const reach = peak === null ? [] : rs.map((r) => r.curve.find((p) => p.meanAt8 >= peak - 1e-12)?.rollouts).filter((x): x is number => x !== undefined);
      rows.push({
        domain, method, seeds: rs.length,
        best: meanStd(rs.map((r) => r.bestMeanAt8).filter((x): x is number => x !== null)),
        final: meanStd(rs.map((r) => r.finalMeanAt8).filter((x): x is number => x !== null)),
        rolloutsUsed: meanStd(rs.map((r) => r.rolloutsUsed)),
        toPeak: meanStd(reach), reachedPeak: reach.length,
        wallSeconds: meanStd(rs.map((r) => r.wallSeconds)),
        wallRange: medianRange(rs.map((r) => r.wallSeconds)),
        protocols: [...new Set(rs.map(runProtocol))].sort(),
        budgeted: rs.filter((r) => r.budget?.withinBudget != null).length,
        withinBudget: rs.filter((r) => r.budget?.withinBudget === true).length,
      });
    }
  }
  return { rows, peaks };
}

