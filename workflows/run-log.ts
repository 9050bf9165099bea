// The log context of a run (run id, phase, cycle, step): on the workflow's own log lines and, through
// every activity input, on the workers' log lines.
import { workflowInfo } from '@temporalio/workflow';
import type { LogContext } from '../activities/types';
import type { RunState } from './run-state';

/** Run id, phase, cycle and step: attached to every activity's log lines and to the workflow's own. */
export function logContext(state: RunState | null): LogContext {
  const phase = state?.phase;
  return {
    runId: workflowInfo().workflowId,
    phase: !phase ? 'preparing' : phase.kind === 'weight' || phase.kind === 'harness' ? `${phase.kind}-${phase.index}` : phase.kind,
    cycle: state?.cycle ?? 0,
    step: state?.weightStepsDone ?? 0,
  };
}

