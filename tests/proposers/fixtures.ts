// Shared set-up for the proposer tests: a temporary artifact root with a real store, the real sandbox
// pool, the built-in domains (unknown names fail loudly), and an archive whose round 0 is recorded.
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { openArchive, recordCandidateEvaluation, type HarnessArchive } from '../../activities/archive';
import { createProposerActivities, type ProposerActivityDeps } from '../../activities/proposer-activities';
import type { ProposeHarnessesInput } from '../../activities/types';
import { readSeedHarness } from '../../domains/harnesses';
import { getDomain, type BuiltinDomainName } from '../../domains/registry';
import type { DomainInstance } from '../../domains/types';
import type { SandboxPool } from '../../harness-sandbox/pool';
import { DirectoryArtifactStore } from '../../store/artifact-store';

const instances = new Map<string, DomainInstance>();
export function domainInstance(name: string): DomainInstance {
  if (!['search-qa', 'math', 'chess'].includes(name)) throw new Error(`test double: unexpected domain ${name}`);
  let inst = instances.get(name);
  if (!inst) instances.set(name, (inst = getDomain(name).load({ kind: 'synthetic' })));
  return inst;
}

/** Trajectory lines in the archive's format, reduced to the fields the proposers count. */
export function fakeTrajectories(n: number, successEvery: number): string {
  const stops = ['turn-limit', 'answer', 'format-errors', 'answer', 'illegal-actions'];
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const ok = i % successEvery === 0;
    lines.push(JSON.stringify({
      trajectoryId: `t${i}`, reward: ok ? 1 : 0, stopReason: ok ? 'answer' : stops[i % stops.length], stopDetail: '',
      turns: [{ action: { kind: i % 3 === 0 ? 'tool' : 'answer' } }], messages: [{ role: 'user', content: `question ${i}` }, { role: 'assistant', content: '<answer>x</answer>' }],
    }));
  }
  return lines.map((l) => l + '\n').join('');
}

export interface Harnessed {
  root: string;
  store: DirectoryArtifactStore;
  archive: HarnessArchive;
  archiveKey: string;
  acts: ReturnType<typeof createProposerActivities>;
  cleanup(): void;
}

export async function setUp(domain: BuiltinDomainName, sandbox: SandboxPool, extra: Partial<ProposerActivityDeps> = {}, incomingSource = readSeedHarness(domain)): Promise<Harnessed> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'whale-proposer-test-'));
  const store = new DirectoryArtifactStore(root);
  const archiveKey = `run-${domain}/harness-phase-1`;
  const archive = openArchive(root, archiveKey);
  await recordCandidateEvaluation(archive, 'incoming', { successRate: 0.25, meanTurns: 1.8, meanTokens: 40, rollouts: 12, trajectoriesJsonl: fakeTrajectories(12, 4), source: incomingSource });
  const acts = createProposerActivities({ store, artifactRoot: root, sandbox, domain: domainInstance, env: process.env, ...extra });
  return { root, store, archive, archiveKey, acts, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export function proposeInput(h: Harnessed, domain: string, round: number, proposer: ProposeHarnessesInput['proposer'], o: Partial<ProposeHarnessesInput> = {}): ProposeHarnessesInput {
  return { runId: 'run', domain, seed: 7, cycle: 1, round, count: 3, promptOnly: false, archiveKey: h.archiveKey, accepted: 'incoming', proposer, ...o };
}

export { path };
export const cleanupDir = (dir: string): void => rmSync(dir, { recursive: true, force: true });
