// The comparison's claims, checked from its results: does the preregistered WHALE beat each single-lever
// method on final test mean@8 (paired by seed), does adaptive reach fixed's final score with fewer rollouts,
// which lever dominates where; and the sweep table for WHALE configurations that were not preregistered.
import type { RunResult } from './compare-history';
import { meanStd, runProtocol } from './compare-stats';

type MeanStd = ReturnType<typeof meanStd>;

/** The fewest paired seeds a claim is judged on; with fewer the verdict says so instead of holding or failing. */
export const MIN_SEEDS = 3;
export type Verdict = 'holds' | 'fails' | 'not enough seeds (n<3)';

/**
 * The configuration fixed before the results, per sizes: the preset names it and the comparison plans it as this
 * token (tests check the two agree). Sizes without one (the earlier comparison) get no claims table.
 */
export const PREREGISTERED: Record<string, { token: string; protocol: 'equal'; preset: string } | undefined> = {
  'three-epochs': { token: 'whale-fixed:0.6:6', protocol: 'equal', preset: 'presets/compare-3-epochs.json' },
};

/** The methods that move one lever only, in the order the table lists them. */
export const SINGLE_LEVER = ['weights-only', 'harness-only', 'prompt-only', 'stagewise', 'stagewise-harness-first'] as const;

/** Where the paper says each lever dominates (domains it makes no claim on are absent). */
export const PAPER_DOMINANT: Record<string, 'weights' | 'harness'> = { math: 'weights', 'search-qa': 'harness' };

export interface PairedSeed { seed: number; whale: number; other: number; diff: number }
export interface Signs { plus: number; minus: number; tie: number }

export interface BeatRow {
  domain: string;
  protocol: string;
  whale: string;
  other: string;
  whaleFinal: MeanStd;
  otherFinal: MeanStd;
  /** Seeds both methods finished with a final score: whale − other on the same seed. */
  paired: PairedSeed[];
  diff: MeanStd;
  signs: Signs;
  verdict: Verdict;
}

export interface AdaptiveSeed { seed: number; fixedFinal: number; fixedRollouts: number; reachedAt: number | null; fewer: boolean }
export interface AdaptiveRow { domain: string; protocol: string; fixed: string; adaptive: string; fixedFinal: MeanStd; fixedRollouts: MeanStd; perSeed: AdaptiveSeed[]; fewer: number; verdict: Verdict }

export interface LeverRow {
  domain: string;
  /** Final mean@8 minus the run's first test point (θ0 under h0), mean ± std over seeds. */
  gains: Record<'weights-only' | 'harness-only' | 'prompt-only', MeanStd>;
  /** weights-only gain − harness-only gain on the same seed. */
  paired: PairedSeed[];
  signs: Signs;
  dominant: 'weights' | 'harness' | 'neither' | 'not enough seeds (n<3)';
  paper: 'weights' | 'harness' | null;
  verdict: Verdict | 'no claim in the paper';
}

export interface SweepRow { domain: string; method: string; protocol: string; seeds: number; final: MeanStd; best: MeanStd; versus: string; diff: MeanStd; signs: Signs }

export interface Claims {
  preregistered: { token: string; protocol: string; preset: string } | null;
  /** What searched harnesses in these runs, in words (the proposer kinds the run configs name). */
  harnessSearch: string;
  proposerKinds: string[];
  rule: string;
  beats: BeatRow[];
  adaptive: AdaptiveRow[];
  levers: LeverRow[];
  sweep: SweepRow[];
}

export const RULE = `A claim holds when its paired per-seed difference has a positive mean and is positive on more than half of the seeds; with fewer than ${MIN_SEEDS} paired seeds it is not judged. This is a count over seeds, not a significance test.`;

const EPS = 1e-12;

export function signCount(diffs: number[]): Signs {
  return { plus: diffs.filter((d) => d > EPS).length, minus: diffs.filter((d) => d < -EPS).length, tie: diffs.filter((d) => Math.abs(d) <= EPS).length };
}

export const signText = (s: Signs) => `+${s.plus}/−${s.minus}/=${s.tie}`;

/** The verdict on paired differences (positive: the claim's direction). */
export function verdict(diffs: number[]): Verdict {
  if (diffs.length < MIN_SEEDS) return 'not enough seeds (n<3)';
  const mean = diffs.reduce((a, b) => a + b, 0) / diffs.length;
  return mean > EPS && signCount(diffs).plus > diffs.length / 2 ? 'holds' : 'fails';
}

/** The method token under a protocol: `paper:` runs are named by their protocol. */
const under = (token: string, protocol: string) => (protocol === 'paper' ? `paper:${token}` : token);
const runsOf = (results: RunResult[], domain: string, method: string, protocol: string) =>
  results.filter((r) => r.domain === domain && r.method === method && runProtocol(r) === protocol);

/** Per seed, a value of each side where both have one (the first run per seed counts). */
function pair(a: RunResult[], b: RunResult[], value: (r: RunResult) => number | null): PairedSeed[] {
  const out: PairedSeed[] = [];
  for (const ra of a) {
    const rb = b.find((r) => r.seed === ra.seed);
    const va = value(ra);
    const vb = rb ? value(rb) : null;
    if (va === null || vb === null || out.some((p) => p.seed === ra.seed)) continue;
    out.push({ seed: ra.seed, whale: va, other: vb, diff: va - vb });
  }
  return out.sort((x, y) => x.seed - y.seed);
}

const finals = (rs: RunResult[]) => meanStd(rs.map((r) => r.finalMeanAt8).filter((x): x is number => x !== null));
const final = (r: RunResult) => r.finalMeanAt8;

/** The run's first test point: the initial evaluation (θ0 under h0). */
export function firstTestPoint(r: RunResult): number | null {
  return r.initialMeanAt8 ?? r.curve[0]?.meanAt8 ?? null;
}

/** The rollouts at which a run's test grid (or, without one, its test curve), then its final score, first reaches `target`. */
export function rolloutsToReach(r: RunResult, target: number): number | null {
  const points = r.grid?.length ? r.grid.map((g) => ({ rollouts: g.atRollouts, meanAt8: g.meanAt8 })) : [...r.curve];
  if (r.finalMeanAt8 !== null) points.push({ rollouts: r.rolloutsUsed, meanAt8: r.finalMeanAt8 });
  const hit = points.filter((p) => p.meanAt8 >= target - EPS).sort((a, b) => a.rollouts - b.rollouts)[0];
  return hit ? hit.rollouts : null;
}

function proposerKind(r: RunResult): string {
  const p = (r.input?.harness as { proposer?: { kind?: string } } | undefined)?.proposer;
  return p?.kind ?? 'builtin';
}

/** A WHALE fixed configuration that is not the preregistered one (any protocol): the sweep table's. */
export function isSweep(method: string, preregistered: string | null): boolean {
  const inner = method.replace(/^paper:/, '');
  return inner.startsWith('whale-fixed:') && inner !== preregistered;
}

export function describeSearch(kinds: string[]): string {
  if (kinds.length === 0) return 'no harness search ran';
  const words: Record<string, string> = {
    builtin: 'the built-in catalogue search (deterministic edits from a fixed catalogue of mechanisms, `harness.proposer.kind: builtin`), not a coding-agent proposer reading traces',
    'coding-agent': 'a coding-agent proposer (`harness.proposer.kind: coding-agent`)',
    openai: 'a chat-model proposer (`harness.proposer.kind: openai`)',
  };
  return kinds.map((k) => words[k] ?? `proposer kind \`${k}\``).join('; and ');
}

/** Checks the claims on the finished results. `preregistered`: the sizes' preregistered configuration, or null. */
export function computeClaims(results: RunResult[], domains: string[], preregistered: { token: string; protocol: string; preset: string } | null): Claims {
  const kinds = [...new Set(results.filter((r) => !r.method.endsWith('weights-only')).map(proposerKind))].sort();
  const claims: Claims = { preregistered, harnessSearch: describeSearch(kinds), proposerKinds: kinds, rule: RULE, beats: [], adaptive: [], levers: [], sweep: [] };
  if (!preregistered) return claims;
  const token = preregistered.token;
  for (const domain of domains) {
    for (const protocol of [preregistered.protocol, 'paper']) {
      const whaleToken = under(token, protocol);
      const whale = runsOf(results, domain, whaleToken, protocol);
      if (whale.length === 0) continue;
      // Under the paper's protocol only weights-only has a paper: run to be compared with.
      const others = protocol === 'paper' ? ['weights-only'] : [...SINGLE_LEVER];
      for (const o of others) {
        const other = runsOf(results, domain, under(o, protocol), protocol);
        if (other.length === 0) continue;
        const paired = pair(whale, other, final);
        const diffs = paired.map((p) => p.diff);
        claims.beats.push({ domain, protocol, whale: whaleToken, other: under(o, protocol), whaleFinal: finals(whale), otherFinal: finals(other), paired, diff: meanStd(diffs), signs: signCount(diffs), verdict: verdict(diffs) });
      }
      const adaptive = runsOf(results, domain, under('whale-adaptive', protocol), protocol);
      if (adaptive.length) claims.adaptive.push(adaptiveRow(domain, protocol, whale, adaptive, whaleToken));
    }
    claims.levers.push(leverRow(results, domain, preregistered.protocol));
    for (const method of [...new Set(results.filter((r) => r.domain === domain && isSweep(r.method, token)).map((r) => r.method))]) {
      for (const protocol of [...new Set(results.filter((r) => r.domain === domain && r.method === method).map(runProtocol))]) {
        const rs = runsOf(results, domain, method, protocol);
        const versus = under(token, protocol === 'paper' ? 'paper' : preregistered.protocol);
        const diffs = pair(rs, runsOf(results, domain, versus, protocol), final).map((p) => p.diff);
        claims.sweep.push({
          domain, method, protocol, seeds: rs.length, final: finals(rs), best: meanStd(rs.map((r) => r.bestMeanAt8).filter((x): x is number => x !== null)),
          versus, diff: meanStd(diffs), signs: signCount(diffs),
        });
      }
    }
  }
  return claims;
}

function adaptiveRow(domain: string, protocol: string, fixed: RunResult[], adaptive: RunResult[], fixedToken: string): AdaptiveRow {
  const perSeed: AdaptiveSeed[] = [];
  for (const f of [...fixed].sort((a, b) => a.seed - b.seed)) {
    const a = adaptive.find((r) => r.seed === f.seed);
    if (!a || f.finalMeanAt8 === null || perSeed.some((p) => p.seed === f.seed)) continue;
    const reachedAt = rolloutsToReach(a, f.finalMeanAt8);
    perSeed.push({ seed: f.seed, fixedFinal: f.finalMeanAt8, fixedRollouts: f.rolloutsUsed, reachedAt, fewer: reachedAt !== null && reachedAt < f.rolloutsUsed });
  }
  // The claim's direction: +1 a seed where adaptive got there with fewer rollouts, −1 where it did not.
  const v = verdict(perSeed.map((p) => (p.fewer ? 1 : -1)));
  return {
    domain, protocol, fixed: fixedToken, adaptive: under('whale-adaptive', protocol), fixedFinal: finals(fixed), fixedRollouts: meanStd(fixed.map((r) => r.rolloutsUsed)),
    perSeed, fewer: perSeed.filter((p) => p.fewer).length, verdict: v,
  };
}

function leverRow(results: RunResult[], domain: string, protocol: string): LeverRow {
  const gain = (r: RunResult) => (r.finalMeanAt8 === null || firstTestPoint(r) === null ? null : r.finalMeanAt8 - firstTestPoint(r)!);
  const runs = (m: string) => runsOf(results, domain, m, protocol);
  const gains = (m: string) => meanStd(runs(m).map(gain).filter((x): x is number => x !== null));
  const paired = pair(runs('weights-only'), runs('harness-only'), gain);
  const diffs = paired.map((p) => p.diff);
  const dominant: LeverRow['dominant'] = diffs.length < MIN_SEEDS ? 'not enough seeds (n<3)' : verdict(diffs) === 'holds' ? 'weights' : verdict(diffs.map((d) => -d)) === 'holds' ? 'harness' : 'neither';
  const paper = PAPER_DOMINANT[domain] ?? null;
  const v: LeverRow['verdict'] = paper === null ? 'no claim in the paper' : diffs.length < MIN_SEEDS ? 'not enough seeds (n<3)' : dominant === paper ? 'holds' : 'fails';
  return { domain, gains: { 'weights-only': gains('weights-only'), 'harness-only': gains('harness-only'), 'prompt-only': gains('prompt-only') }, paired, signs: signCount(diffs), dominant, paper, verdict: v };
}

const pm = (s: MeanStd, d = 4) => (s ? `${s.mean.toFixed(d)} ± ${s.std.toFixed(d)}` : '-');
const signed = (x: number, d = 4) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(d)}`;
const perSeed = (p: PairedSeed[]) => (p.length ? p.map((x) => `s${x.seed} ${signed(x.diff)}`).join(', ') : '-');
const bold = (v: string) => (v === 'holds' ? v : `**${v}**`);

/** The claims section of results.md: the claims table, adaptive against fixed, the levers, and the sweep. */
export function claimsMarkdown(c: Claims): string {
  const lines: string[] = ['## Claims', ''];
  if (!c.preregistered) {
    lines.push('No configuration was preregistered for these sizes, so no claim is checked here (the claims table needs a preregistered WHALE configuration, e.g. `--sizes three-epochs`).', '');
    return lines.join('\n');
  }
  const p = c.preregistered;
  lines.push(
    `Preregistered WHALE: \`${p.token}\` under protocol \`${p.protocol}\` (named in \`${p.preset}\` before its runs). Figures are final test mean@8 on D_test, mean ± std over seeds; differences are WHALE minus the other method on the same seed.`,
    `Harness search in these runs: ${c.harnessSearch}.`,
    c.rule, '',
    '### Does the preregistered WHALE beat each single-lever method?', '',
    '| domain | protocol | WHALE | other method | WHALE final | other final | paired difference | per seed | signs | verdict |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...c.beats.map((b) => `| ${b.domain} | ${b.protocol} | ${b.whale} | ${b.other} | ${pm(b.whaleFinal)} | ${pm(b.otherFinal)} | ${pm(b.diff)} | ${perSeed(b.paired)} | ${signText(b.signs)} | ${bold(b.verdict)} |`),
    c.beats.length ? '' : '\n(no finished runs of the preregistered configuration beside a single-lever method yet)\n',
    '### Does WHALE adaptive reach fixed\'s final score with fewer rollouts?', '',
    'Per seed: the training + search rollouts at which adaptive\'s test grid (then its final score) first reaches the preregistered fixed run\'s final mean@8 on the same seed, against the fixed run\'s total.', '',
    '| domain | protocol | fixed | fixed final | fixed total rollouts | adaptive reaches it at (per seed) | fewer rollouts | verdict |',
    '|---|---|---|---|---|---|---|---|',
    ...c.adaptive.map((a) => `| ${a.domain} | ${a.protocol} | ${a.fixed} | ${pm(a.fixedFinal)} | ${pm(a.fixedRollouts, 0)} | ${a.perSeed.map((s) => `s${s.seed} ${s.reachedAt ?? 'never'} / ${s.fixedRollouts}`).join(', ') || '-'} | ${a.fewer}/${a.perSeed.length} seeds | ${bold(a.verdict)} |`),
    c.adaptive.length ? '' : '\n(no finished WHALE adaptive runs beside the preregistered configuration yet)\n',
    '### Which lever dominates where?', '',
    'Gain: final mean@8 minus the run\'s first test point (the base θ0 under h0), protocol `' + p.protocol + '`. Paired: weights-only gain minus harness-only gain on the same seed. The paper: harness on search QA, weights on math.', '',
    '| domain | weights-only gain | harness-only gain | prompt-only gain | paired (weights − harness) | signs | dominant | paper | verdict |',
    '|---|---|---|---|---|---|---|---|---|',
    ...c.levers.map((l) => `| ${l.domain} | ${pm(l.gains['weights-only'])} | ${pm(l.gains['harness-only'])} | ${pm(l.gains['prompt-only'])} | ${perSeed(l.paired)} | ${signText(l.signs)} | ${l.dominant} | ${l.paper ?? '-'} | ${l.verdict === 'holds' || l.verdict === 'no claim in the paper' ? l.verdict : `**${l.verdict}**`} |`),
    '',
  );
  if (c.sweep.length) {
    lines.push(
      '### Sweep: WHALE configurations that were not preregistered', '',
      'Reported for information only; they carry no claim (choosing among them on D_test would select on the test set).', '',
      '| domain | method | protocol | seeds | final mean@8 | best mean@8 | vs preregistered | paired difference (this − preregistered) | signs |',
      '|---|---|---|---|---|---|---|---|---|',
      ...c.sweep.map((s) => `| ${s.domain} | ${s.method} | ${s.protocol} | ${s.seeds} | ${pm(s.final)} | ${pm(s.best)} | ${s.versus} | ${pm(s.diff)} | ${signText(s.signs)} |`),
      '',
    );
  }
  return lines.join('\n');
}
