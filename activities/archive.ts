// The Meta-Harness archive of one harness phase, laid out as plain files under
// `<artifactRoot>/archives/<archiveKey>/` (layout: docs/harness-phase.md). Every write is atomic
// (temp file + fsync + rename), so a reader (a person, a proposer's copy) never sees a half-written file.
// The archive holds D_harness material only: D_test results live elsewhere in the store.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../store/artifact-store';
import type { ArchiveRow } from './types';

/** What the proposer stated about a candidate (pending_eval.json entry) plus where it came from. */
export interface CandidateMeta {
  name: string;
  round: number;
  parent: string;
  hypothesis: string;
  changes: string;
  axis: string;
  /** Which proposer wrote it (builtin, coding-agent, openai) or 'incoming'. */
  proposer: string;
  sourceSha256: string;
}

export interface CandidateScore {
  successRate: number;
  meanTurns: number;
  meanTokens: number;
  rollouts: number;
}

export interface CandidateValidation {
  valid: boolean;
  failureKind: string | null;
  reason: string | null;
  /** Every violation the validator found (empty when valid). */
  violations: Array<{ where: string; message: string; line?: number }>;
  smoke: string;
}

/** A candidate as a proposer sees it in the archive: everything but the trajectories themselves. */
export interface ArchivedCandidate {
  name: string;
  source: string | null;
  meta: CandidateMeta | null;
  validation: CandidateValidation | null;
  score: CandidateScore | null;
  hasTrajectories: boolean;
}

export const ARCHIVE_FILES = {
  candidatesDir: 'candidates',
  roundsDir: 'rounds',
  source: 'harness.ts',
  meta: 'meta.json',
  validation: 'validation.json',
  score: 'score.json',
  trajectories: 'trajectories.jsonl',
  summary: 'evolution_summary.jsonl',
  frontier: 'frontier.json',
  manifest: 'manifest.json',
  complete: 'COMPLETE.json',
} as const;

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$/;

function checkName(name: string, what: string): string {
  if (!NAME_RE.test(name)) throw new Error(`invalid ${what} ${JSON.stringify(name)}: use letters, digits, '.', '_' and '-'`);
  return name;
}

/** An archive key is `<runId>/<phase>`: '/'-separated safe segments, never '..'. */
export function archiveDir(root: string, archiveKey: string): string {
  const segments = archiveKey.split('/');
  if (segments.length === 0 || segments.some((s) => s === '..' || s === '.' || !NAME_RE.test(s))) {
    throw new Error(`invalid archive key ${JSON.stringify(archiveKey)}: '/'-separated segments of letters, digits, '.', '_' and '-'`);
  }
  return path.join(root, 'archives', ...segments);
}

async function readText(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function readJson<T>(file: string): Promise<T | null> {
  const text = await readText(file);
  return text === null ? null : (JSON.parse(text) as T);
}

const json = (value: unknown): string => JSON.stringify(value, null, 2) + '\n';

/** The phase archive: typed reads and atomic writes of its plain files. */
export class HarnessArchive {
  constructor(readonly dir: string, readonly archiveKey: string) {}

  candidateDir(name: string): string {
    return path.join(this.dir, ARCHIVE_FILES.candidatesDir, checkName(name, 'candidate name'));
  }

  roundDir(round: number): string {
    if (!Number.isInteger(round) || round < 0) throw new Error(`invalid round ${round}`);
    return path.join(this.dir, ARCHIVE_FILES.roundsDir, `r${round}`);
  }

  async writeCandidate(meta: CandidateMeta, source: string): Promise<void> {
    const dir = this.candidateDir(meta.name);
    await writeFileAtomic(path.join(dir, ARCHIVE_FILES.source), source);
    await writeFileAtomic(path.join(dir, ARCHIVE_FILES.meta), json(meta));
  }

  /** Writes the source only when the folder has none (round 0's incoming harness arrives this way). */
  async ensureSource(name: string, source: string): Promise<void> {
    const file = path.join(this.candidateDir(name), ARCHIVE_FILES.source);
    if ((await readText(file)) !== source) await writeFileAtomic(file, source);
  }

  async writeValidation(name: string, validation: CandidateValidation): Promise<void> {
    await writeFileAtomic(path.join(this.candidateDir(name), ARCHIVE_FILES.validation), json(validation));
  }

  /** Trajectories first, score last: a score on disk always has its traces beside it. */
  async writeEvaluation(name: string, score: CandidateScore, trajectoriesJsonl: string): Promise<void> {
    const dir = this.candidateDir(name);
    await writeFileAtomic(path.join(dir, ARCHIVE_FILES.trajectories), trajectoriesJsonl);
    await writeFileAtomic(path.join(dir, ARCHIVE_FILES.score), json(score));
  }

  async writeRoundFile(round: number, file: string, content: string): Promise<void> {
    await writeFileAtomic(path.join(this.roundDir(round), checkName(file, 'round file')), content);
  }

  async readRoundFile(round: number, file: string): Promise<string | null> {
    return readText(path.join(this.roundDir(round), checkName(file, 'round file')));
  }

  /** Removes candidate folders of a round beyond `keep` (left by an earlier attempt of the same round). */
  async removeStaleCandidates(round: number, keep: number): Promise<void> {
    for (const name of await this.candidateNames()) {
      const m = /^r(\d+)-c(\d+)$/.exec(name);
      if (m && Number(m[1]) === round && Number(m[2]) > keep) await fs.rm(this.candidateDir(name), { recursive: true, force: true });
    }
  }

  async candidateNames(): Promise<string[]> {
    try {
      const entries = await fs.readdir(path.join(this.dir, ARCHIVE_FILES.candidatesDir), { withFileTypes: true });
      return entries.filter((e) => e.isDirectory() && NAME_RE.test(e.name)).map((e) => e.name).sort(compareCandidateNames);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  async readCandidate(name: string): Promise<ArchivedCandidate> {
    const dir = this.candidateDir(name);
    const [source, meta, validation, score] = await Promise.all([
      readText(path.join(dir, ARCHIVE_FILES.source)),
      readJson<CandidateMeta>(path.join(dir, ARCHIVE_FILES.meta)),
      readJson<CandidateValidation>(path.join(dir, ARCHIVE_FILES.validation)),
      readJson<CandidateScore>(path.join(dir, ARCHIVE_FILES.score)),
    ]);
    const hasTrajectories = (await readText(path.join(dir, ARCHIVE_FILES.trajectories))) !== null;
    return { name, source, meta, validation, score, hasTrajectories };
  }

  async readCandidates(): Promise<ArchivedCandidate[]> {
    return Promise.all((await this.candidateNames()).map((n) => this.readCandidate(n)));
  }

  /** The candidate's D_harness trajectories as raw JSONL ('' when it was never scored). */
  async readTrajectoriesJsonl(name: string): Promise<string> {
    return (await readText(path.join(this.candidateDir(name), ARCHIVE_FILES.trajectories))) ?? '';
  }

  /**
   * Removes the completion marker: the phase is running again under the same key (a workflow reset to
   * the phase's start, or a workflow id reused). The marker must never claim a phase that is in progress.
   */
  async reopen(): Promise<boolean> {
    const marker = path.join(this.dir, ARCHIVE_FILES.complete);
    if ((await readText(marker)) === null) return false;
    await fs.rm(marker, { force: true });
    return true;
  }

  async isComplete(): Promise<boolean> {
    return (await readText(path.join(this.dir, ARCHIVE_FILES.complete))) !== null;
  }

  /**
   * End of the phase: per-row metadata, the evolution summary, the frontier and the manifest, then the
   * completion marker, written last so its presence means everything before it is on disk.
   */
  async finalize(input: { runId: string; rows: ArchiveRow[]; accepted: string; frontier: string[] }): Promise<{ manifest: string }> {
    for (const row of input.rows) {
      const existing = await readJson<CandidateMeta>(path.join(this.candidateDir(row.name), ARCHIVE_FILES.meta));
      if (!existing) {
        await writeFileAtomic(path.join(this.candidateDir(row.name), ARCHIVE_FILES.meta), json({
          name: row.name, round: row.round, parent: row.parent, hypothesis: row.hypothesis, changes: row.changes, axis: row.axis,
          proposer: row.round === 0 ? 'incoming' : 'unknown', sourceSha256: row.source.sha256,
        } satisfies CandidateMeta));
      }
    }
    const frontier = new Set(input.frontier);
    const summary = input.rows.map((r) => JSON.stringify({
      round: r.round, name: r.name, parent: r.parent, status: r.status, successRate: r.successRate, meanTurns: r.meanTurns,
      meanTokens: r.meanTokens, onFrontier: frontier.has(r.name), accepted: r.name === input.accepted,
      hypothesis: r.hypothesis, changes: r.changes, axis: r.axis, reason: r.reason, sourceSha256: r.source.sha256,
    }));
    await writeFileAtomic(path.join(this.dir, ARCHIVE_FILES.summary), summary.map((l) => l + '\n').join(''));
    const frontierRows = input.rows.filter((r) => frontier.has(r.name)).map((r) => ({ name: r.name, successRate: r.successRate, meanTurns: r.meanTurns, meanTokens: r.meanTokens }));
    await writeFileAtomic(path.join(this.dir, ARCHIVE_FILES.frontier), json({ accepted: input.accepted, frontier: frontierRows }));
    const manifest = json({
      kind: 'whale-harness-archive', version: 1, runId: input.runId, archiveKey: this.archiveKey, accepted: input.accepted,
      frontier: input.frontier, rows: input.rows,
      files: { summary: ARCHIVE_FILES.summary, frontier: ARCHIVE_FILES.frontier, candidates: `${ARCHIVE_FILES.candidatesDir}/<name>/` },
    });
    await writeFileAtomic(path.join(this.dir, ARCHIVE_FILES.manifest), manifest);
    await writeFileAtomic(path.join(this.dir, ARCHIVE_FILES.complete), json({ archiveKey: this.archiveKey, accepted: input.accepted, candidates: input.rows.length }));
    return { manifest };
  }
}

/** Orders r<round>-c<i> names numerically, 'incoming' first, anything else by name after them. */
export function compareCandidateNames(a: string, b: string): number {
  const key = (n: string): [number, number, string] => {
    if (n === 'incoming') return [0, 0, n];
    const m = /^r(\d+)-c(\d+)$/.exec(n);
    return m ? [Number(m[1]), Number(m[2]), n] : [Number.MAX_SAFE_INTEGER, 0, n];
  };
  const [ar, ac, an] = key(a);
  const [br, bc, bn] = key(b);
  return ar - br || ac - bc || an.localeCompare(bn);
}

export function openArchive(root: string, archiveKey: string): HarnessArchive {
  return new HarnessArchive(archiveDir(root, archiveKey), archiveKey);
}

/**
 * Called by the model worker's evaluateHarness: writes the candidate's score on D_harness and its full
 * trajectories into its folder (and its source, for round 0's incoming harness, which no proposer wrote).
 */
export async function recordCandidateEvaluation(
  archive: HarnessArchive,
  name: string,
  result: { successRate: number; meanTurns: number; meanTokens: number; rollouts: number; trajectoriesJsonl: string; source: string },
): Promise<void> {
  await archive.ensureSource(name, result.source);
  await archive.writeEvaluation(name, { successRate: result.successRate, meanTurns: result.meanTurns, meanTokens: result.meanTokens, rollouts: result.rollouts }, result.trajectoriesJsonl);
}


