// The WHALE run workflow: cycles of weight phase then harness phase (or one lever, per method), every
// heavy step an activity, every decision a pure function from workflows/decisions. The state is one
// versioned object carried through continue-as-new; phase, step and scores are mirrored to search
// attributes and memo so a person can see where a run stands while no worker runs.
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  allHandlersFinished,
  isCancellation,
  log,
  makeContinueAsNewFunc,
  patched,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { expandRunConfig, Switching } from './run-config';
import { RunStateSchema, STATE_VERSION, type RunState, type RunSummary } from './run-state';
import { epochsToSteps, stepsPerEpoch as computeStepsPerEpoch } from './decisions';
import { stageAt } from './whale-run-plan';
import { createActivityProxies, type Acts } from './whale-run-activities';
import { logContext } from './run-log';
import { activitySummary, currentDetails } from './user-metadata';
import { isRetryableFault, isWhaleError } from '../common/errors';
import { toApplicationFailure } from '../common/failure';
import { endWeightPhase, runWeightStep, startWeightPhase } from './weight-phase';
import { endHarnessPhase, runHarnessRound, startHarnessPhase } from './harness-phase';
import { evaluateOnTest } from './test-eval';
import { budgetReport, harnessStageUnaffordable, weightBudgetSpent } from './budget-protocol';
import { gridEvaluations } from './test-grid';
import { STOP_ENDS_RUN_AFTER_PHASE_PATCH } from './patches';
import { UPGRADE_AT_PHASE_BOUNDARY_PATCH } from './patches';
import {
  pauseRunSignal, pauseRunUpdate, resumeRunSignal, resumeRunUpdate, runStatusQuery, setSwitchingPolicyUpdate,
  stopRunSignal, stopRunUpdate, type StopMode,
} from './whale-run-messages';
import {
  WhaleBestScore, WhaleCycle, WhaleDomain, WhaleFinalScore, WhaleMethod, WhalePhase, WhaleRollouts, WhaleRunState,
  WhaleStep, WhaleTrainReward,
} from './search-attributes';

/** Starts or continues a run. `input` is the user's partial config; `carried` is state from continue-as-new. */
export async function whaleRun(input: unknown, carried?: unknown): Promise<RunSummary> {
  try {
    return await runWhale(input, carried);
  } catch (err) {
    throw runFailure(err);
  }
}

/**
 * The workflow's error boundary (docs/errors.md). A WhaleError whose fault is not retried (a decision rule
 * that refuses its input: fault `bug`) fails the run at once, through the same mapper as the activities, with
 * its type and message; thrown as it is, it would fail the workflow task, which Temporal retries forever
 * while the run looks stuck. Everything else passes unchanged: a TemporalFailure (InvalidRunConfig, a failed
 * activity) already fails the run, and an unforeseen error (a TypeError) fails the task, so a worker with
 * the fix resumes the run where it stood. No patch: only a task that failed ever reached this path, and a
 * failed task records no commands to replay.
 */
function runFailure(err: unknown): unknown {
  return isWhaleError(err) && !isRetryableFault(err.fault) ? toApplicationFailure(err) : err;
}

async function runWhale(input: unknown, carried?: unknown): Promise<RunSummary> {
  let state: RunState | null = null;
  let unitScope: CancellationScope | null = null;

  if (carried !== undefined && carried !== null) {
    const parsed = RunStateSchema.safeParse(carried);
    if (!parsed.success) {
      throw ApplicationFailure.nonRetryable(
        `the carried run state does not match state version ${STATE_VERSION}: ${parsed.error.issues.slice(0, 5).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
        'InvalidRunState',
      );
    }
    state = parsed.data;
  }
  // After the carried state is in place: messages buffered across continue-as-new see it at once.
  // Signals are durable: one that arrives before the state exists (e.g. a pause sent while no worker ran)
  // is kept here and applied as soon as the run is initialised.
  const early: RunState['control'] = { paused: false, stop: null };
  registerHandlers(() => state, () => unitScope, early);

  const expanded = state ? { ok: true as const, config: state.config } : expandRunConfig(input);
  if (!expanded.ok) {
    throw ApplicationFailure.nonRetryable(
      `invalid run config (fix these fields and start the run again):\n${expanded.problems.map((p) => `  - ${p}`).join('\n')}`,
      'InvalidRunConfig',
    );
  }
  const config = expanded.config;
  const acts = createActivityProxies(config, () => logContext(state));

  if (!state) {
    upsertSearchAttributes([
      { key: WhalePhase, value: 'preparing' }, { key: WhaleMethod, value: config.method },
      { key: WhaleDomain, value: config.domain }, { key: WhaleRunState, value: 'running' },
    ]);
    state = await initialiseRun(config, acts);
    state.control = { paused: state.control.paused || early.paused, stop: state.control.stop ?? early.stop };
  }
  publish(state, 'running');

  // True right after a unit that ended a phase: the only place a run moves to a new worker version.
  let atPhaseBoundary = false;
  while (state.phase.kind !== 'done') {
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      state.continuedAsNew += 1;
      return continueAsNew<typeof whaleRun>(input, state);
    }
    // Only versioned workers (opt-in) ever see the flag; unversioned runs and older histories never reach patched().
    if (atPhaseBoundary && workflowInfo().targetWorkerDeploymentVersionChanged && patched(UPGRADE_AT_PHASE_BOUNDARY_PATCH)) {
      await condition(allHandlersFinished);
      state.continuedAsNew += 1;
      log.info('continuing as new onto the Worker Deployment\'s new current version at a phase boundary', { ...logContext(state) });
      return makeContinueAsNewFunc<typeof whaleRun>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(input, state);
    }
    atPhaseBoundary = false;
    if (state.control.paused && !state.control.stop) {
      publish(state, 'paused');
      await condition(() => !state!.control.paused || state!.control.stop !== null);
      publish(state, 'running');
    }
    if (state.control.stop && state.phase.kind !== 'final') {
      await closePhaseOnStop(state, acts);
      continue;
    }
    const current = state;
    const phaseBefore = phaseLabelOf(current);
    try {
      await CancellationScope.cancellable(async () => {
        unitScope = CancellationScope.current();
        await runUnit(current, acts);
      });
      atPhaseBoundary = phaseLabelOf(current) !== phaseBefore;
    } catch (err) {
      if (isCancellation(err) && current.control.stop === 'abandon-step') {
        log.info('run stopped: current step abandoned on request', { ...logContext(current) });
        current.phase = { kind: 'done' };
      } else {
        throw err;
      }
    } finally {
      unitScope = null;
    }
    publish(current, current.phase.kind === 'done' ? 'completed' : current.control.paused ? 'paused' : 'running');
  }
  await condition(allHandlersFinished);
  return summarise(state);
}

async function initialiseRun(config: RunState['config'], acts: Acts): Promise<RunState> {
  const runId = workflowInfo().workflowId;
  const prepared = await acts.model.prepareRun({
    runId, config, domain: config.domain, seed: config.seed, modelPreset: config.model.preset,
    baseCheckpoint: config.model.baseCheckpoint, baseHarness: config.model.baseHarness,
  }, activitySummary.prepareRun(config));
  // weight.taskLimit: the run's D_weight is a seeded subset, and epochs count over it (same sizes without it).
  const splitSizes = { ...prepared.splitSizes, weight: Math.min(prepared.splitSizes.weight, config.weight.taskLimit ?? prepared.splitSizes.weight) };
  const stepsPerEpoch = computeStepsPerEpoch(splitSizes.weight, config.weight.promptsPerStep);
  const state: RunState = {
    stateVersion: STATE_VERSION, runId, config, splitSizes, stepsPerEpoch,
    testEverySteps: epochsToSteps(config.test.everyEpochs, stepsPerEpoch),
    baseCheckpoint: prepared.checkpoint, baseHarness: prepared.harness,
    checkpoint: prepared.checkpoint, harness: prepared.harness, harnessName: 'h0',
    cycle: 1, stage: 0, phase: { kind: 'done' }, weightStepsDone: 0, proposalRoundsDone: 0,
    cursor: { epoch: 0, offset: 0 }, ledger: { training: 0, search: 0, test: 0 },
    tests: { evaluations: [], best: null, final: null }, initialMeanAt8: null, lastEvalKey: null,
    lastTrainReward: null, phases: [], control: { paused: false, stop: null }, policyChanges: [], continuedAsNew: 0,
  };
  const initial = await evaluateOnTest(state, acts, 'initial', { countsForBest: false });
  state.initialMeanAt8 = initial;
  enterStage(state);
  return state;
}

/** Moves to the method's next stage (or the final evaluation when the plan is complete). */
export function enterStage(state: RunState): void {
  const plan = stageAt(state.config, state.stage);
  if (!plan) {
    state.phase = { kind: 'final' };
    return;
  }
  if (plan.kind === 'weight') {
    startWeightPhase(state);
    return;
  }
  // Protocol 'equal': a harness stage the rest cannot pay for is skipped (no phase opened, nothing spent).
  const unaffordable = harnessStageUnaffordable(state);
  if (unaffordable) {
    log.info('harness stage skipped', { ...logContext(state), rule: unaffordable });
    state.stage += 1;
    enterStage(state);
    return;
  }
  startHarnessPhase(state);
}

/** Runs one unit of work: a weight step, a harness round, or the final evaluation. */
async function runUnit(state: RunState, acts: Acts): Promise<void> {
  const phase = state.phase;
  if (phase.kind === 'weight') {
    const ended = await runWeightStep(state, phase, acts);
    if (ended) afterPhase(state);
  } else if (phase.kind === 'harness') {
    const ended = await runHarnessRound(state, phase, acts);
    if (ended) afterPhase(state);
  } else if (phase.kind === 'final') {
    const final = await evaluateOnTest(state, acts, 'final', { countsForBest: true });
    state.tests.final = final;
    state.phase = { kind: 'done' };
  }
}

/** A stop that arrives between units still closes the open phase, so the audit sees where it ended. */
async function closePhaseOnStop(state: RunState, acts: Acts): Promise<void> {
  const abandon = state.control.stop === 'abandon-step';
  if (state.phase.kind === 'weight') endWeightPhase(state, state.phase, 'stopped on request');
  else if (state.phase.kind === 'harness' && !abandon) await endHarnessPhase(state, state.phase, acts, 'stopped on request');
  state.phase = abandon ? { kind: 'done' } : { kind: 'final' };
}

function afterPhase(state: RunState): void {
  const justFinished = state.phases[state.phases.length - 1];
  const budgetDone = state.weightStepsDone >= state.config.budget.totalWeightSteps
    || (state.config.budget.maxRollouts !== null && state.ledger.training + state.ledger.search >= state.config.budget.maxRollouts)
    || weightBudgetSpent(state);
  const alternating = stageAt(state.config, 0)?.length === 'switching';
  // Alternating methods end after the weight phase that reaches the budget.
  if (alternating && justFinished?.kind === 'weight' && budgetDone) {
    state.phase = { kind: 'final' };
    return;
  }
  // A phase that a stop request ended goes straight to the final evaluation, as a stop between units does;
  // runs recorded before this rule opened the next phase only to close it at once (patched).
  if (state.control.stop && patched(STOP_ENDS_RUN_AFTER_PHASE_PATCH)) {
    state.phase = state.control.stop === 'abandon-step' ? { kind: 'done' } : { kind: 'final' };
    return;
  }
  if (justFinished?.kind === 'harness') state.cycle += 1;
  state.stage += 1;
  enterStage(state);
}

function phaseLabelOf(state: RunState): string {
  return state.phase.kind === 'weight' || state.phase.kind === 'harness' ? `${state.phase.kind}-${state.phase.index}` : state.phase.kind;
}

function publish(state: RunState, runState: string): void {
  const phaseLabel = phaseLabelOf(state);
  upsertSearchAttributes([
    { key: WhalePhase, value: phaseLabel },
    { key: WhaleMethod, value: state.config.method },
    { key: WhaleDomain, value: state.config.domain },
    { key: WhaleRunState, value: runState },
    { key: WhaleCycle, value: state.cycle },
    { key: WhaleStep, value: state.weightStepsDone },
    { key: WhaleRollouts, value: state.ledger.training + state.ledger.search },
    ...(state.tests.best !== null ? [{ key: WhaleBestScore, value: state.tests.best }] : []),
    ...(state.tests.final !== null ? [{ key: WhaleFinalScore, value: state.tests.final }] : []),
    ...(state.lastTrainReward !== null ? [{ key: WhaleTrainReward, value: state.lastTrainReward }] : []),
  ]);
  const phase = state.phase;
  upsertMemo({
    whaleStatus: {
      phase: phaseLabel, runState, cycle: state.cycle, weightStepsDone: state.weightStepsDone,
      proposalRoundsDone: state.proposalRoundsDone, ledger: state.ledger,
      initialMeanAt8: state.initialMeanAt8, bestMeanAt8: state.tests.best, finalMeanAt8: state.tests.final,
      harness: state.harnessName, checkpoint: state.checkpoint.sha256.slice(0, 12),
      lastRule: phase.kind === 'weight' || phase.kind === 'harness' ? phase.lastRule : '',
      // Only under a comparison protocol: memos of runs without one stay as they were recorded.
      ...(state.config.budget.protocol !== 'none' ? { budget: budgetReport(state) } : {}),
    },
  });
  // Web UI "current details" (answered by a worker's query; writes no event, so replay is unchanged).
  setCurrentDetails(currentDetails(state, phaseLabel, runState));
}

function registerHandlers(get: () => RunState | null, scope: () => CancellationScope | null, early: RunState['control']): void {
  const requireState = (): RunState => {
    const s = get();
    if (!s) throw new Error('the run is still initialising; try again in a moment');
    return s;
  };
  const applyStop = (mode: StopMode | undefined) => {
    const s = requireState();
    s.control.stop = mode ?? 'finish-step';
    if (s.control.stop === 'abandon-step') scope()?.cancel();
  };
  setHandler(runStatusQuery, () => get());
  const control = () => get()?.control ?? early;
  setHandler(pauseRunSignal, () => void (control().paused = true));
  setHandler(resumeRunSignal, () => void (control().paused = false));
  setHandler(stopRunSignal, (arg) => {
    if (get()) applyStop(arg?.mode);
    else early.stop = arg?.mode ?? 'finish-step';
  });
  setHandler(pauseRunUpdate, () => ((requireState().control.paused = true), { paused: true }), { validator: () => void requireState() });
  setHandler(resumeRunUpdate, () => ((requireState().control.paused = false), { paused: false }), { validator: () => void requireState() });
  setHandler(stopRunUpdate, (arg) => (applyStop(arg?.mode), { stop: requireState().control.stop! }), {
    validator: (arg) => {
      requireState();
      if (arg?.mode !== undefined && arg.mode !== 'finish-step' && arg.mode !== 'abandon-step') {
        throw new Error(`stop mode must be 'finish-step' or 'abandon-step', got ${JSON.stringify(arg.mode)}`);
      }
    },
  });
  setHandler(
    setSwitchingPolicyUpdate,
    (policy) => {
      const s = requireState();
      const previous = s.config.switching;
      const next = validatePolicy(s, policy);
      s.config.switching = next;
      // The method names the switching kind: a fixed run moved to patience is an adaptive run from here on.
      s.config.method = next.kind === 'patience' ? 'whale-adaptive' : 'whale-fixed';
      s.policyChanges.push({ atWeightStep: s.weightStepsDone, switching: next });
      if (s.phase.kind === 'weight' && next.kind === 'patience' && previous.kind !== 'patience') s.phase.patience = null;
      return previous;
    },
    { validator: (policy) => void validatePolicy(requireState(), policy) },
  );
}

/** Validates a new switching policy (merged onto the current one); throws an Error that rejects the update. */
function validatePolicy(state: RunState, policy: unknown): Switching {
  if (state.config.method !== 'whale-fixed' && state.config.method !== 'whale-adaptive') {
    throw new Error(`method '${state.config.method}' has no switching policy to change; only 'whale-fixed' and 'whale-adaptive' runs do`);
  }
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    throw new Error('the policy must be a JSON object, e.g. {"kind":"patience","patienceEpochs":0.1}');
  }
  const incoming = policy as Record<string, unknown>;
  const base = incoming.kind === undefined || incoming.kind === state.config.switching.kind ? state.config.switching : {};
  const parsed = Switching.safeParse({ ...base, ...incoming });
  if (!parsed.success) {
    throw new Error(`invalid switching policy: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'policy'}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

function summarise(state: RunState): RunSummary {
  return {
    runId: state.runId, method: state.config.method, domain: state.config.domain,
    weightStepsDone: state.weightStepsDone, proposalRoundsDone: state.proposalRoundsDone,
    initialMeanAt8: state.initialMeanAt8, bestMeanAt8: state.tests.best, finalMeanAt8: state.tests.final,
    ledger: state.ledger, finalCheckpoint: state.checkpoint, finalHarness: state.harness,
    finalHarnessName: state.harnessName, phases: state.phases, stoppedEarly: state.control.stop !== null,
    continuedAsNew: state.continuedAsNew, budget: budgetReport(state), gridEvaluations: gridEvaluations(state),
    testEvaluations: state.tests.evaluations,
  };
}
