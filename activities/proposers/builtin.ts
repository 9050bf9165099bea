// The built-in offline proposer: reads the archive copy in its workspace (sources, scores, D_harness
// traces), picks parents by score and mechanisms by the failure categories counted in the parents' traces,
// and writes real harness source made by one catalogue transformation each, plus pending_eval.json.
// Seeded and deterministic: the same archive and seed give the same candidates. Candidates that change only
// number literals against their parent are dropped unless the run config opts in (docs/method.md).
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { HarnessArchive } from '../archive';
import { applyEdits, parseHarnessSource, readLiteralConfig, replaceInitializer, tsString } from './harness-source';
import { harnessIdentity, isConstantOnlyChange } from './constant-only';
import { readHooks } from './hook-templates';
import { MECHANISMS, type Mechanism, type MechanismEnv, type ParentHarness, type Transformation } from './mechanisms';
import { traceStats } from './trace-stats';
import { WORKSPACE, slotFile, type PendingEvalEntry, type Proposer, type ProposerContext, type ProposerRun } from './types';

/** mulberry32: small, fast, good enough to pick among a dozen options deterministically. */
export function seededRng(...parts: Array<number | string>): () => number {
  let a = createHash('sha256').update(parts.join('|')).digest().readUInt32LE(0);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Fields worth showing: scalar, varying across the sampled tasks, not already in the question. */
export function mechanismEnv(ctx: Pick<ProposerContext, 'tools' | 'answerKind' | 'sampleViews' | 'promptOnly'>): MechanismEnv {
  const pick = (source: 'view' | 'observation' | 'both'): string[] => {
    const keys = new Set<string>();
    for (const s of ctx.sampleViews) {
      if (source !== 'observation') Object.keys(s.view).forEach((k) => keys.add(k));
      if (source !== 'view') Object.keys(s.observation).forEach((k) => keys.add(k));
    }
    return [...keys].filter((k) => {
      if (k === 'question' || !IDENT.test(k)) return false;
      const values = ctx.sampleViews.map((s) => s.observation[k] ?? s.view[k]);
      if (!values.every((v) => typeof v === 'string' || typeof v === 'number')) return false;
      if (new Set(values.map(String)).size < 2) return false;
      return !ctx.sampleViews.some((s, i) => String(values[i]).length > 0 && s.question.toLowerCase().includes(String(values[i]).toLowerCase()));
    }).sort();
  };
  return { tools: ctx.tools, answerKind: ctx.answerKind, templateFields: pick('both'), observationFields: pick('observation'), promptOnly: ctx.promptOnly };
}

async function loadParents(archive: HarnessArchive): Promise<{ ranked: ParentHarness[]; sources: Set<string> }> {
  const candidates = await archive.readCandidates();
  const sources = new Set(candidates.map((c) => c.source).filter((s): s is string => s !== null).map(harnessIdentity));
  const parents: ParentHarness[] = [];
  for (const c of candidates) {
    if (!c.source || !c.score || (c.validation && !c.validation.valid)) continue;
    const info = parseHarnessSource(c.source);
    if (!info) continue;
    const jsonl = await archive.readTrajectoriesJsonl(c.name);
    parents.push({
      name: c.name, source: c.source, info, config: readLiteralConfig(info), hooks: readHooks(info),
      stats: jsonl ? traceStats(jsonl) : null, successRate: c.score.successRate, meanTurns: c.score.meanTurns,
    });
  }
  // Best first: success rate, then fewer turns; names break ties (archive order is deterministic).
  parents.sort((a, b) => b.successRate - a.successRate || a.meanTurns - b.meanTurns || a.name.localeCompare(b.name));
  return { ranked: parents, sources };
}

function weightedPick<T>(items: T[], weights: number[], rng: () => number): number {
  const total = weights.reduce((a, b) => a + b, 0);
  let r = rng() * total;
  for (let i = 0; i < items.length; i++) {
    r -= weights[i];
    if (r < 0) return i;
  }
  return items.length - 1;
}

/** What the parent's traces showed, in words, for the hypothesis (the archive says why a mechanism was tried). */
function evidence(p: ParentHarness): string {
  const s = p.stats;
  if (!s || !s.episodes) return `${p.name}: success ${p.successRate.toFixed(3)}, no traces`;
  const top = Object.entries(s.failures).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([c, n]) => `${c} ${n}`);
  return `${p.name}: ${s.successes}/${s.episodes} solved; failures ${top.join(', ') || 'none'}; ${s.failedWithoutTool} failed without a tool call`;
}

function nameStem(name: string | undefined): string {
  return (name ?? 'harness').replace(/-r\d+c\d+$/, '').slice(0, 150);
}

export interface BuiltinCandidate {
  file: string;
  source: string;
  entry: PendingEvalEntry;
}

export interface BuiltinOptions {
  /** Let candidates whose diff against their parent changes only number literals through (default false). */
  allowConstantOnly?: boolean;
}

/** Plans and renders up to `count` candidates (pure given the archive contents, the seed and the options). */
export async function proposeBuiltin(ctx: ProposerContext, archive: HarnessArchive, opts: BuiltinOptions = {}): Promise<{ candidates: BuiltinCandidate[]; notes: string[] }> {
  const env = mechanismEnv(ctx);
  const { ranked, sources } = await loadParents(archive);
  const notes: string[] = [];
  if (!ranked.length) return { candidates: [], notes: ['no scored, parseable candidate in the archive to start from'] };
  const rng = seededRng('whale-builtin', ctx.seed, ctx.round);
  const accepted = ranked.find((p) => p.name === ctx.accepted) ?? ranked[0];
  const top = ranked.slice(0, 3);
  const catalogue = MECHANISMS.filter((m) => !ctx.promptOnly || m.promptOnly);
  const out: BuiltinCandidate[] = [];
  for (let slot = 1; slot <= ctx.count; slot++) {
    const parent = slot === 1 ? accepted : top[weightedPick(top, top.map((_, i) => top.length - i), rng)];
    const others = ranked.filter((p) => p.source !== parent.source);
    const partner = others.length ? others[Math.floor(rng() * Math.min(3, others.length))] : null;
    const made = pickTransformation(parent, partner, env, catalogue, rng, sources, opts.allowConstantOnly === true);
    if (!made) {
      notes.push(`slot ${slot}: no mechanism in the catalogue gives a new harness from ${parent.name}`);
      continue;
    }
    let edits = made.edits;
    if (!ctx.promptOnly) {
      const rename = replaceInitializer(parent.info, 'name', tsString(`${nameStem(parent.config.name)}-r${ctx.round}c${slot}`));
      if (rename) edits = [...edits, rename];
    }
    const source = applyEdits(parent.source, edits);
    sources.add(harnessIdentity(source));
    out.push({
      file: slotFile(slot), source,
      entry: { file: slotFile(slot), parent: parent.name, hypothesis: `${made.hypothesis} (${evidence(parent)})`, changes: made.changes, axis: made.axis, components: [made.mechanism] },
    });
  }
  return { candidates: out, notes };
}

function pickTransformation(
  parent: ParentHarness, partner: ParentHarness | null, env: MechanismEnv, catalogue: Mechanism[], rng: () => number, seen: Set<string>, allowConstantOnly: boolean,
): Transformation | null {
  const pool = catalogue.filter((m) => m.id !== 'crossover' || partner !== null);
  const weights = pool.map((m) => m.weight(parent, env));
  while (pool.length) {
    const i = weightedPick(pool, weights, rng);
    // A few variants per mechanism: one may reproduce a harness already in the archive, another not.
    for (let attempt = 0; attempt < 4; attempt++) {
      const t = pool[i].apply(parent, env, Math.floor(rng() * 1024), partner);
      if (!t) break;
      const source = applyEdits(parent.source, t.edits);
      // Judged by the diff, not the mechanism's name: a variant that only moves numbers is parameter tuning.
      if (!allowConstantOnly && isConstantOnlyChange(parent.source, source)) break;
      if (!seen.has(harnessIdentity(source))) return t;
    }
    pool.splice(i, 1);
    weights.splice(i, 1);
  }
  return null;
}

export function createBuiltinProposer(opts: BuiltinOptions = {}): Proposer {
  return {
    kind: 'builtin',
    async propose(ctx: ProposerContext): Promise<ProposerRun> {
      const archive = new HarnessArchive(ctx.workspace, 'workspace');
      const { candidates, notes } = await proposeBuiltin(ctx, archive, opts);
      for (const c of candidates) {
        await fs.mkdir(path.dirname(path.join(ctx.workspace, c.file)), { recursive: true });
        await fs.writeFile(path.join(ctx.workspace, c.file), c.source);
      }
      await fs.writeFile(path.join(ctx.workspace, WORKSPACE.pendingEval), JSON.stringify({ candidates: candidates.map((c) => c.entry) }, null, 2) + '\n');
      const log = [`builtin proposer, seed ${ctx.seed}, round ${ctx.round}`, ...candidates.map((c) => `${c.file}: parent ${c.entry.parent}; ${c.entry.axis}; ${c.entry.changes}`), ...notes].join('\n');
      return { tokens: null, usd: null, log, failure: candidates.length ? null : notes.join('; ') || 'no candidates' };
    },
  };
}
