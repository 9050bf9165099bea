// Temporal user metadata, the text the Web UI shows: the run's summary and details (set by whoever starts
// the run) and a one-line summary on each activity (set at the call sites). Pure strings: workflow-safe.
import { expandRunConfig, type RunConfig } from './run-config';
import type { RunState } from './run-state';

type RunIdentity = Pick<RunConfig, 'method' | 'domain' | 'seed'> & Partial<Pick<RunConfig, 'name'>>;

/** A domain's short name: a built-in name as it is, a pinned folder reference (file:///…/dir#sha256=…) as its folder's name. */
export function domainShortName(domain: string): string {
  if (!domain.startsWith('file:')) return domain;
  const dir = domain.split('#', 1)[0].replace(/\/+$/, '');
  return decodeURIComponent(dir.slice(dir.lastIndexOf('/') + 1)) || domain;
}

/** The workflow's one-line static summary: method, domain, seed (and the config's name when it has one). */
export function runSummary(c: RunIdentity): string {
  const name = c.name?.trim() ? ` (${oneLine(c.name)})` : '';
  return `WHALE ${c.method} on ${domainShortName(c.domain)}, seed ${c.seed}${name}`;
}

/** The workflow's static details: a few lines of Markdown with what the run will do. */
export function runDetails(c: RunConfig): string {
  const budget = c.budget.maxRollouts !== null && c.budget.maxRollouts !== undefined
    ? `${c.budget.totalWeightSteps} weight steps or ${c.budget.maxRollouts} rollouts` : `${c.budget.totalWeightSteps} weight steps`;
  return [
    `**method** ${c.method}, **domain** ${c.domain}, **seed** ${c.seed}`,
    `**model** ${c.model.preset}; start ${c.model.baseCheckpoint ? `checkpoint ${c.model.baseCheckpoint.sha256.slice(0, 12)}` : 'base policy'}, ${c.model.baseHarness ? `harness ${c.model.baseHarness.sha256.slice(0, 12)}` : 'seed harness h0'}`,
    `**switching** ${c.switching.kind}; **budget** ${budget}`,
    `**weight step** ${c.weight.promptsPerStep} prompts x ${c.weight.samplesPerPrompt} samples; **harness round** ${c.harness.candidatesPerRound} candidates from the ${c.harness.proposer.kind} proposer`,
    c.lineage ? `**branched from** ${c.lineage.parentRunId} (${c.lineage.which})` : '',
  ].filter(Boolean).join('\n');
}

/** The one-line summaries on the activities, in the words of the method. */
export const activitySummary = {
  prepareRun: (c: RunIdentity) => `prepare run: ${c.method} on ${domainShortName(c.domain)}, seed ${c.seed}`,
  rolloutBatch: (step: number, rollouts: number) => `rollout batch, step ${step}, ${rollouts} rollouts`,
  fineTuneStep: (step: number) => `fine-tune step ${step}`,
  evaluateTest: (label: string, step: number) => `test evaluation ${label} at step ${step}`,
  proposeHarnesses: (phase: number, round: number, count: number) => `harness ${phase} round ${round}: propose ${count} candidates`,
  validateHarness: (phase: number, round: number, candidate: string) => `harness ${phase} round ${round}, candidate ${candidate}: validate`,
  evaluateHarness: (phase: number, round: number, candidate: string) => round === 0
    ? `harness ${phase} round 0: re-score the incoming harness`
    : `harness ${phase} round ${round}, candidate ${candidate}: score on D_harness`,
  finalizeHarnessPhase: (phase: number, accepted: string) => `harness ${phase}: close the archive, accepted ${accepted}`,
};

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').slice(0, 120);
}

/** Start options for `client.workflow.start`: the summary and details of a run config (none when it does not expand). */
export function startMetadata(input: unknown): { staticSummary?: string; staticDetails?: string } {
  const expanded = expandRunConfig(input);
  return expanded.ok ? { staticSummary: runSummary(expanded.config), staticDetails: runDetails(expanded.config) } : {};
}

/** The workflow's current details (Web UI, `temporal workflow describe`): where the run stands now. */
export function currentDetails(s: RunState, phaseLabel: string, runState: string): string {
  const best = s.tests.best === null ? '-' : s.tests.best.toFixed(4);
  const rule = s.phase.kind === 'weight' || s.phase.kind === 'harness' ? s.phase.lastRule : '';
  return [
    `**${runState}**, phase ${phaseLabel}, cycle ${s.cycle}: ${s.weightStepsDone} weight steps, ${s.proposalRoundsDone} proposal rounds`,
    `rollouts ${s.ledger.training} training + ${s.ledger.search} search; test mean@8 best ${best}, harness ${s.harnessName}`,
    rule ? `last rule: ${oneLine(rule)}` : '',
  ].filter(Boolean).join('\n');
}
