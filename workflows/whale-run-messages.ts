// Signals, queries and updates of the WHALE run workflow. Signals are durable while no worker runs (use
// them during preemption); updates validate their input and answer, but need a live orchestration worker.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { RunState } from './run-state';

export type StopMode = 'finish-step' | 'abandon-step';

export const pauseRunSignal = defineSignal<[]>('pause');
export const resumeRunSignal = defineSignal<[]>('resume');
export const stopRunSignal = defineSignal<[{ mode?: StopMode }?]>('stop');

export const runStatusQuery = defineQuery<RunState | null>('status');

/** Replaces (part of) the switching policy; returns the previous policy. */
export const setSwitchingPolicyUpdate = defineUpdate<unknown, [unknown]>('setSwitchingPolicy');
export const pauseRunUpdate = defineUpdate<{ paused: boolean }, []>('pauseRun');
export const resumeRunUpdate = defineUpdate<{ paused: boolean }, []>('resumeRun');
export const stopRunUpdate = defineUpdate<{ stop: StopMode }, [{ mode?: StopMode }]>('stopRun');
