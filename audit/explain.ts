// Recomputes every phase switch of a run from the signals its history recorded, with the same pure rules
// the workflow uses (workflows/decisions), and compares the result with the phase records the workflow
// wrote. A mismatch means the audit and the run disagree: it is reported, never hidden.
import {
  epochsToSteps, initialHarnessPatience, initialWeightPatience, observeHarnessRound, observeWeightStep, paretoFrontier,
  selectAccepted, skipHarnessRound, stepsPerEpoch as computeStepsPerEpoch, type CandidateScore,
} from '../workflows/decisions';
import { SKIP_UNSCORED_ROUNDS_PATCH } from '../workflows/patches';
import { Switching, type RunConfig } from '../workflows/run-config';
import { stageAt } from '../workflows/whale-run-plan';
import type { HarnessPhaseFact, Timeline } from './timeline';

export interface PhaseExplanation {
  kind: 'weight' | 'harness';
  index: number;
  startStep: number;
  endStep: number;
  proposalRounds: number;
  /** The rule that fired, recomputed from the recorded signals. */
  rule: string;
  /** The rule the workflow recorded (null when the history has no record of this phase yet). */
  recordedRule: string | null;
  matches: boolean | null;
  /** Per-step (weight) or per-round (harness) values the decision looked at. */
  trace: string[];
  accepted?: string;
  frontier?: string[];
}

/** The switching policy in force after `step` weight steps, with every accepted policy update applied. */
function policyAt(t: Timeline, config: RunConfig, step: number): Switching {
  let policy = config.switching;
  for (const m of t.messages) {
    if (m.kind !== 'update' || m.name !== 'setSwitchingPolicy' || m.atWeightStep > step) continue;
    const incoming = (m.args[0] ?? {}) as Record<string, unknown>;
    const base = incoming.kind === undefined || incoming.kind === policy.kind ? policy : {};
    const parsed = Switching.safeParse({ ...base, ...incoming });
    if (parsed.success) policy = parsed.data;
  }
  return policy;
}

function harnessScores(phase: HarnessPhaseFact): CandidateScore[] {
  return phase.rows.filter((r) => r.status === 'evaluated').map((r, i) => ({
    id: r.name, successRate: r.successRate ?? 0, meanTurns: r.meanTurns ?? 0, meanTokens: r.meanTokens ?? 0, incoming: r.name === 'incoming', order: i,
  }));
}

export function explainPhases(t: Timeline): PhaseExplanation[] {
  const config = t.config;
  if (!config || !t.splitSizes) return [];
  const spe = computeStepsPerEpoch(t.splitSizes.weight, config.weight.promptsPerStep);
  const out: PhaseExplanation[] = [];
  const stopAt = t.messages.find((m) => m.name === 'stop' || m.name === 'stopRun');
  // A stop that finishes the step in flight ends the phase after that step; one between steps (or one that
  // abandons the step) ends it after the steps already done.
  const stopMode = ((stopAt?.args[0] ?? {}) as { mode?: string }).mode ?? 'finish-step';
  const stopAfterStep = stopAt ? stopAt.atWeightStep + (stopAt.stepInFlight && stopMode !== 'abandon-step' ? 1 : 0) : null;
  let stepIdx = 0;
  let harnessIdx = 0;
  for (let stage = 0; ; stage++) {
    const plan = stageAt(config, stage);
    if (!plan) break;
    if (plan.kind === 'weight') {
      if (stepIdx >= t.steps.length) break;
      const index = out.filter((p) => p.kind === 'weight').length + 1;
      const start = stepIdx;
      let patience = initialWeightPatience();
      let rule = 'the history ends inside this phase (run still going, or stopped)';
      const trace: string[] = [];
      while (stepIdx < t.steps.length) {
        const s = t.steps[stepIdx++];
        const policy = policyAt(t, config, s.step - 1);
        const inPhase = stepIdx - start;
        trace.push(`step ${s.step}: reward ${s.meanReward ?? 'missing'}, accepted ${s.accepted}/${s.rollouts}`);
        let fired: string | null = null;
        if (policy.kind === 'patience' && plan.length === 'switching') {
          const params = {
            windowSteps: epochsToSteps(policy.windowEpochs, spe), burnInSteps: epochsToSteps(policy.burnInEpochs, spe), patienceSteps: epochsToSteps(policy.patienceEpochs, spe),
          };
          const r = observeWeightStep(patience, s.meanReward, params);
          patience = r.state;
          trace[trace.length - 1] += ` -> ${r.decision.rule}`;
          if (r.decision.shouldSwitch) fired = r.decision.rule;
        }
        const budget = s.step >= config.budget.totalWeightSteps;
        if (budget) fired = `budget reached: ${s.step}/${config.budget.totalWeightSteps} weight steps`;
        else if (stopAfterStep !== null && stopAfterStep <= s.step && stopAfterStep >= start) fired = 'stopped on request';
        else if (!fired && policy.kind === 'fixed' && plan.length === 'switching' && inPhase >= epochsToSteps(policy.weightEpochs, spe)) {
          fired = `fixed schedule: ${inPhase} steps = E ${policy.weightEpochs} epochs x ${spe} steps/epoch`;
        }
        if (fired) {
          rule = fired;
          break;
        }
      }
      out.push({ kind: 'weight', index, startStep: t.steps[start]?.step - 1, endStep: t.steps[stepIdx - 1]?.step ?? 0, proposalRounds: 0, rule, recordedRule: null, matches: null, trace });
    } else {
      const phase = t.harnessPhases[harnessIdx++];
      if (!phase) break;
      const scores = harnessScores(phase);
      const accepted = scores.length ? selectAccepted(scores) : null;
      const rounds = Math.max(0, ...phase.rows.map((r) => r.round));
      const trace: string[] = [];
      const policy = policyAt(t, config, t.steps[stepIdx - 1]?.step ?? 0);
      let rule = `${rounds} proposal rounds`;
      if (policy.kind === 'patience' && plan.length === 'switching') {
        let hp = initialHarnessPatience();
        // The workflow skips the patience check on rounds that scored nothing once it runs the patched code.
        const skipsUnscored = t.patches.some((p) => p.id === SKIP_UNSCORED_ROUNDS_PATCH && p.atHarnessPhase <= harnessIdx - 1);
        for (let r = 1; r <= rounds; r++) {
          const best = Math.max(...scores.filter((c) => (phase.rows.find((row) => row.name === c.id)?.round ?? 0) <= r).map((c) => c.successRate));
          const hParams = {
            minProposalRounds: policy.harnessMinProposalRounds, patienceRounds: policy.harnessPatienceRounds,
            maxProposalRounds: policy.harnessMaxProposalRounds, stopAtScore: policy.harnessStopAtScore,
          };
          const scoredRound = phase.rows.some((row) => row.round === r && row.status === 'evaluated');
          const o = skipsUnscored && !scoredRound ? skipHarnessRound(hp, best, hParams) : observeHarnessRound(hp, best, hParams);
          hp = o.state;
          trace.push(`round ${r}: ${o.decision.rule}`);
          if (o.decision.shouldStop) rule = o.decision.rule;
        }
      } else {
        for (const row of phase.rows) trace.push(`round ${row.round} ${row.name}: ${row.status === 'evaluated' ? `success ${row.successRate}, turns ${row.meanTurns}` : `invalid (${row.reason})`}`);
      }
      const ok = accepted ? accepted.accepted.id === phase.accepted : null;
      out.push({
        kind: 'harness', index: harnessIdx, startStep: t.steps[stepIdx - 1]?.step ?? 0, endStep: t.steps[stepIdx - 1]?.step ?? 0, proposalRounds: rounds,
        rule: `${rule}; ${accepted?.reason ?? 'no evaluated candidate'}`, recordedRule: null, matches: ok, trace,
        accepted: phase.accepted, frontier: paretoFrontier(scores).map((c) => c.id),
      });
    }
  }
  // Compare with what the workflow recorded, phase by phase.
  for (const p of out) {
    const rec = t.recordedPhases.find((r) => r.kind === p.kind && r.index === p.index);
    if (!rec) continue;
    p.recordedRule = rec.rule;
    const sameEnd = rec.endStep === p.endStep && rec.proposalRounds === p.proposalRounds;
    const sameRule = p.kind === 'weight' ? rec.rule.split(':')[0] === p.rule.split(':')[0] : p.matches !== false;
    p.matches = sameEnd && sameRule;
  }
  return out;
}
