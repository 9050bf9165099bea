// Recomputes every phase switch of a run from the signals its history recorded, with the same pure rules
// the workflow uses (workflows/decisions), and compares the result with the phase records the workflow
// wrote. A mismatch means the audit and the run disagree: it is reported, never hidden.
import {
  epochsToSteps, initialHarnessPatience, initialWeightPatience, observeHarnessRound, observeWeightStep, paretoFrontier,
  runBudgetReached, selectAccepted, skipHarnessRound, stepsPerEpoch as computeStepsPerEpoch, type CandidateScore,
} from '../workflows/decisions';
import { SKIP_UNSCORED_ROUNDS_PATCH } from '../workflows/patches';
import { Switching, type RunConfig } from '../workflows/run-config';
import { stageAt } from '../workflows/whale-run-plan';
import type { HarnessPhaseFact, Timeline } from './timeline';
import { equalBudgetOf, harnessStopUnderBudget, harnessSwitchBudget, weightSplitSize, weightStepBudget } from './explain-budget';

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
  /** Under a comparison protocol: the harness phase's stop rule recomputed with the budget gates. */
  stopRule?: string;
}

/** A rule's kind: the words before its first colon ('fixed schedule', 'budget reached', ...). */
const ruleKind = (rule: string) => rule.split(':')[0];

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
  // Epochs count over the D_weight the run trained on (the weight.taskLimit subset when set).
  const spe = computeStepsPerEpoch(weightSplitSize(config, t.splitSizes), config.weight.promptsPerStep);
  // Protocol 'equal': the workflow's budget gates (workflows/decisions/budget.ts) over the recorded spend.
  const equal = equalBudgetOf(t);
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
      const index = out.filter((p) => p.kind === 'weight').length + 1;
      // The workflow checks the budget before each step too: a phase that starts with the budget reached (a
      // harness phase ended above it) ends with no step.
      const doneSteps = t.steps[stepIdx - 1]?.step ?? 0;
      const spentNow = Math.max(t.steps[stepIdx - 1]?.atRollouts ?? 0, t.harnessPhases[harnessIdx - 1]?.atRollouts ?? 0);
      const gateNow = equal ? weightStepBudget(equal, spentNow) : null;
      if (runBudgetReached(doneSteps, config.budget.totalWeightSteps, { training: spentNow, search: 0, test: 0 }, config.budget.maxRollouts) || (gateNow !== null && !gateNow.allowed)) {
        const rule = `budget reached before step ${doneSteps + 1}: ${doneSteps}/${config.budget.totalWeightSteps} weight steps, ${spentNow} rollouts${config.budget.maxRollouts === null ? '' : ` of ${config.budget.maxRollouts}`}`;
        out.push({ kind: 'weight', index, startStep: doneSteps, endStep: doneSteps, proposalRounds: 0, rule, recordedRule: null, matches: null, trace: [] });
        break;
      }
      if (stepIdx >= t.steps.length) break;
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
        let patienceRule: string | null = null;
        if (policy.kind === 'patience' && plan.length === 'switching') {
          const params = {
            windowSteps: epochsToSteps(policy.windowEpochs, spe), burnInSteps: epochsToSteps(policy.burnInEpochs, spe), patienceSteps: epochsToSteps(policy.patienceEpochs, spe),
          };
          const r = observeWeightStep(patience, s.meanReward, params);
          patience = r.state;
          trace[trace.length - 1] += ` -> ${r.decision.rule}`;
          if (r.decision.shouldSwitch) patienceRule = r.decision.rule;
        }
        // s.atRollouts is training + search after the step: the ledger's budgeted sum.
        const stepGate = equal ? weightStepBudget(equal, s.atRollouts) : null;
        const budget = runBudgetReached(s.step, config.budget.totalWeightSteps, { training: s.atRollouts, search: 0, test: 0 }, config.budget.maxRollouts)
          || (stepGate !== null && !stepGate.allowed);
        if (budget) fired = `budget reached: ${s.step}/${config.budget.totalWeightSteps} weight steps, ${s.atRollouts} rollouts${stepGate ? ` (${stepGate.rule})` : ''}`;
        else if (stopAfterStep !== null && stopAfterStep <= s.step && stopAfterStep >= start) fired = 'stopped on request';
        else {
          const fixedRule = policy.kind === 'fixed' && plan.length === 'switching' && inPhase >= epochsToSteps(policy.weightEpochs, spe)
            ? `fixed schedule: ${inPhase} steps = E ${policy.weightEpochs} epochs x ${spe} steps/epoch` : null;
          for (const asked of [patienceRule, fixedRule]) {
            if (!asked) continue;
            // Under protocol 'equal' a switch the rest cannot pay for (harness phase at its cap + one weight step) is refused.
            const gate = equal ? harnessSwitchBudget(equal, policy, s.atRollouts) : null;
            if (gate && !gate.allowed) {
              trace[trace.length - 1] += ` -> ${asked}; ${gate.rule}: the weight phase goes on`;
              continue;
            }
            fired = asked;
            break;
          }
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
      const patienceStops = new Map<number, string>();
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
          if (o.decision.shouldStop) {
            rule = o.decision.rule;
            patienceStops.set(r, o.decision.rule);
          }
        }
      } else {
        for (const row of phase.rows) trace.push(`round ${row.round} ${row.name}: ${row.status === 'evaluated' ? `success ${row.successRate}, turns ${row.meanTurns}` : `invalid (${row.reason})`}`);
      }
      const ok = accepted ? accepted.accepted.id === phase.accepted : null;
      let stopRule: string | undefined;
      if (equal) {
        const stop = harnessStopUnderBudget(equal, { ...config, switching: policy }, stage, phase, (r) => patienceStops.get(r) ?? null, trace);
        stopRule = stop ? (stop.round === rounds ? stop.rule : `${stop.rule} (at round ${stop.round}, but the phase ran ${rounds})`) : 'no stop rule fired';
        rule = stopRule;
      }
      out.push({
        kind: 'harness', index: harnessIdx, startStep: t.steps[stepIdx - 1]?.step ?? 0, endStep: t.steps[stepIdx - 1]?.step ?? 0, proposalRounds: rounds,
        rule: `${rule}; ${accepted?.reason ?? 'no evaluated candidate'}`, recordedRule: null, matches: ok, trace,
        accepted: phase.accepted, frontier: paretoFrontier(scores).map((c) => c.id), stopRule,
      });
    }
  }
  // Compare with what the workflow recorded, phase by phase.
  for (const p of out) {
    const rec = t.recordedPhases.find((r) => r.kind === p.kind && r.index === p.index);
    if (!rec) continue;
    p.recordedRule = rec.rule;
    const sameEnd = rec.endStep === p.endStep && rec.proposalRounds === p.proposalRounds;
    // A harness phase's rule is compared where the protocol's gates recompute it; a stop request is not in the rounds.
    const sameStop = p.stopRule === undefined || ruleKind(rec.rule) === ruleKind(p.stopRule) || (rec.rule === 'stopped on request' && stopAt !== undefined);
    const sameRule = p.kind === 'weight' ? ruleKind(rec.rule) === ruleKind(p.rule) : p.matches !== false && sameStop;
    p.matches = sameEnd && sameRule;
  }
  return out;
}
