// The proposer worker's activities: proposeHarnesses (one proposer behind one interface, run in a private
// workspace copy of the archive; only slot files are taken), validateHarness (sandbox validator, prompt-only
// rule, smoke run) and finalizeHarnessPhase (summary, frontier, manifest, completion marker). A proposer
// that fails in any way yields { candidates: [], failure } and the phase goes on.
import { atActivityBoundary, cancellationSignal, configError, heartbeatSafe, withHeartbeatTimer } from './activity-context';
import type { JsonObject } from '../agent/environment';
import type { DomainInstance } from '../domains/types';
import type { SandboxPool } from '../harness-sandbox/pool';
import { sharedValidator } from '../harness-sandbox/validator-pool';
import type { ArtifactStore } from '../store/artifact-store';
import type { ArtifactRef } from '../store/artifact-ref';
import { openArchive, type HarnessArchive } from './archive';
import { createBuiltinProposer } from './proposers/builtin';
import { createCodingAgentProposer } from './proposers/coding-agent';
import { createOpenAiProposer } from './proposers/openai';
import type { Proposer, ProposerContext, ProposerRun } from './proposers/types';
import { validateCandidate } from './proposers/validation';
import { collectCandidates, createWorkspace, removeWorkspace } from './proposers/workspace';
import type { FinalizeHarnessPhaseInput, HarnessCandidate, ProposeHarnessesInput, ProposeHarnessesResult, ValidateHarnessInput, ValidateHarnessResult, WhaleActivities } from './types';

export interface ProposerActivityDeps {
  store: ArtifactStore;
  /** Root of the shared artifact directory; archives live under `<artifactRoot>/archives/<archiveKey>/`. */
  artifactRoot: string;
  sandbox: SandboxPool;
  domain(name: string): DomainInstance;
  /** Environment for external proposers (the coding agent's own keys, the API key variable). The worker passes process.env. */
  env?: NodeJS.ProcessEnv;
  /** Where workspaces are made (default: the OS temp directory). */
  workspaceDir?: string;
  /** Heartbeat period while an external proposer runs (default 5 s; well inside the 120 s heartbeat timeout). */
  heartbeatMs?: number;
}

/** How many D_harness task views a proposer is shown to learn which fields a task carries. */
const SAMPLE_VIEWS = 8;




const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const posInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;

/** The proposer for a run config's `harness.proposer` (validated here too: activities may be called directly). */
export function createProposer(config: ProposeHarnessesInput['proposer'], env: NodeJS.ProcessEnv): Proposer {
  switch (config.kind) {
    case 'builtin':
      return createBuiltinProposer({ allowConstantOnly: config.allowConstantOnly === true });
    case 'coding-agent': {
      const { command, timeoutMs } = config;
      if (!Array.isArray(command) || command.length === 0 || !command.every(str)) configError('harness.proposer.command must be a non-empty array of strings (the agent CLI argv)');
      return createCodingAgentProposer({ command, timeoutMs: posInt(timeoutMs) ? timeoutMs : 1_800_000 }, env);
    }
    case 'openai': {
      const { baseUrl, model, apiKeyEnv, timeoutMs, maxRetries } = config;
      if (!str(baseUrl) || !str(model)) configError('harness.proposer for kind "openai" needs baseUrl and model');
      if (maxRetries !== undefined && !(typeof maxRetries === 'number' && Number.isInteger(maxRetries) && maxRetries >= 0)) configError(`harness.proposer.maxRetries must be a non-negative integer; got ${JSON.stringify(maxRetries)}`);
      return createOpenAiProposer({ baseUrl, model, apiKeyEnv: str(apiKeyEnv) ? apiKeyEnv : 'OPENAI_API_KEY', timeoutMs: posInt(timeoutMs) ? timeoutMs : 600_000, maxRetries }, env);
    }
    default:
      return configError(`unknown harness.proposer.kind "${config.kind}"; use builtin, coding-agent or openai`);
  }
}

export function createProposerActivities(deps: ProposerActivityDeps): Pick<WhaleActivities, 'proposeHarnesses' | 'validateHarness' | 'finalizeHarnessPhase'> {
  const env = deps.env ?? {};
  const domainOf = (name: string): DomainInstance => {
    try {
      return deps.domain(name);
    } catch (err) {
      return configError((err as Error).message);
    }
  };

  async function runProposer(input: ProposeHarnessesInput, archive: HarnessArchive, instance: DomainInstance): Promise<ProposeHarnessesResult> {
    const t0 = Date.now();
    const proposer = createProposer(input.proposer, env);
    const ws = await createWorkspace(archive, deps.workspaceDir);
    const signal = cancellationSignal();
    try {
      const ctx: ProposerContext = {
        domain: input.domain, seed: input.seed, round: input.round, count: input.count, promptOnly: input.promptOnly, accepted: input.accepted,
        workspace: ws.dir, tools: instance.environment.tools, answerKind: instance.environment.answerKind,
        sampleViews: instance.splits.harness.slice(0, SAMPLE_VIEWS).map((t) => ({ question: t.question, view: t.view, observation: instance.environment.observe(t, instance.environment.initialState(t)) as JsonObject })),
        heartbeat: heartbeatSafe, heartbeatMs: deps.heartbeatMs ?? 5_000, signal,
      };
      let run: ProposerRun;
      try {
        run = await proposer.propose(ctx);
      } catch (err) {
        run = { tokens: null, usd: null, log: String((err as Error).stack ?? err), failure: `${proposer.kind} proposer crashed: ${(err as Error).message}` };
      }
      // Cancelled (the run was stopped or the activity timed out): report that, record nothing for the round.
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('proposeHarnesses cancelled');
      const collected = await collectCandidates(ws, input.count);
      const known = new Set(await archive.candidateNames());
      let failure = run.failure;
      if (!failure && collected.tampered.length) failure = `proposer modified archive files outside its slots (${collected.tampered.slice(0, 5).join(', ')}); its output is discarded`;
      if (!failure && collected.candidates.length === 0) failure = 'proposer wrote no candidate files';
      const taken = failure ? [] : collected.candidates;
      if (!failure) {
        // Compiled in the validator child (limits, a cache the validateHarness calls reuse): a hostile candidate
        // ends as an invalid row, never as a throw that Temporal would retry or a blocked event loop.
        const compiled = await withHeartbeatTimer(() => Promise.all(taken.map((c) => sharedValidator().compile(c.source))), { compiling: taken.length });
        if (compiled.every((c) => !c.ok || c.compiled.syntaxErrors)) failure = `all ${taken.length} candidate(s) have syntax errors or exceed the compiler's limits (kept as invalid rows)`;
      }

      await archive.removeStaleCandidates(input.round, taken.length);
      const candidates: HarnessCandidate[] = [];
      for (const [i, c] of taken.entries()) {
        const name = `r${input.round}-c${i + 1}`;
        const e = c.entry;
        const parent = typeof e.parent === 'string' && known.has(e.parent) ? e.parent : input.accepted;
        const source = await deps.store.put('harness', c.source);
        const text = (v: unknown, fallback: string) => (typeof v === 'string' && v.trim() ? v.slice(0, 4_000) : fallback);
        const cand: HarnessCandidate = {
          name, source, parent, hypothesis: text(e.hypothesis, '(none stated)'), changes: text(e.changes, '(none stated)'), axis: text(e.axis, 'unspecified'),
        };
        await archive.writeCandidate({ ...cand, round: input.round, proposer: proposer.kind, sourceSha256: source.sha256 }, c.source);
        candidates.push(cand);
      }
      const result: ProposeHarnessesResult = { candidates, failure, cost: { tokens: run.tokens, usd: run.usd, wallMs: Date.now() - t0 } };
      await archive.writeRoundFile(input.round, 'pending_eval.json', JSON.stringify({ candidates: candidates.map((c) => ({ name: c.name, parent: c.parent, hypothesis: c.hypothesis, changes: c.changes, axis: c.axis })) }, null, 2) + '\n');
      await archive.writeRoundFile(input.round, 'proposer.log', [`proposer: ${proposer.kind}`, `failure: ${failure ?? 'none'}`, ...collected.notes.map((n) => `note: ${n}`), '', run.log].join('\n') + '\n');
      // Written last: a retry of this round returns exactly what the first completed attempt decided.
      await archive.writeRoundFile(input.round, 'result.json', JSON.stringify(result, null, 2) + '\n');
      return result;
    } finally {
      await removeWorkspace(ws);
    }
  }

  // Every proposer activity throws through the one boundary: failures Temporal retries only for system faults.
  return atActivityBoundary({
    async proposeHarnesses(input: ProposeHarnessesInput): Promise<ProposeHarnessesResult> {
      const archive = openArchive(deps.artifactRoot, input.archiveKey);
      if (await archive.reopen()) await archive.writeRoundFile(input.round, 'reopened.log', `archive was complete when round ${input.round} was proposed (workflow reset or reused workflow id); completion marker removed\n`);
      const memo = await archive.readRoundFile(input.round, 'result.json');
      if (memo) return JSON.parse(memo) as ProposeHarnessesResult;
      if (!posInt(input.count)) configError(`candidates per round must be a positive integer, got ${input.count}`);
      return runProposer(input, archive, domainOf(input.domain));
    },

    async validateHarness(input: ValidateHarnessInput): Promise<ValidateHarnessResult> {
      const instance = domainOf(input.domain);
      const archive = openArchive(deps.artifactRoot, input.archiveKey);
      const source = (await deps.store.get(input.source)).toString('utf8');
      const base = input.promptOnlyBase ? (await deps.store.get(input.promptOnlyBase)).toString('utf8') : null;
      const v = await withHeartbeatTimer(() => validateCandidate({ sandbox: deps.sandbox, instance, source, promptOnlyBase: base }), { validating: input.name });
      await archive.ensureSource(input.name, source);
      await archive.writeValidation(input.name, v);
      return { valid: v.valid, failureKind: v.failureKind, reason: v.reason, rollouts: 0 };
    },

    async finalizeHarnessPhase(input: FinalizeHarnessPhaseInput): Promise<{ archive: ArtifactRef }> {
      const archive = openArchive(deps.artifactRoot, input.archiveKey);
      const { manifest } = await archive.finalize({ runId: input.runId, rows: input.rows, accepted: input.accepted, frontier: input.frontier });
      return { archive: await deps.store.put('archive', manifest) };
    },
  });
}
