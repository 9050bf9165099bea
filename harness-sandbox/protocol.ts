// Messages between the worker (harness-sandbox/pool.ts) and a sandbox child process
// (harness-sandbox/child-main.ts). One request in flight per child; a batch of a turn is one message.

import type { HarnessManifest } from '../agent/harness-contract';
import type { HarnessFailure, PhaseCall, PhaseResult } from '../agent/harness-runner';
import type { IsolateLimits, LoadedManifestData } from './isolate-harness';

export type ParentMessage =
  | { type: 'load'; id: number; harnessId: string; code: string; limits: IsolateLimits }
  | { type: 'run'; id: number; manifest: HarnessManifest; code: string; limits: IsolateLimits; calls: PhaseCall[] };

export type LoadReply = { ok: true; manifestData: LoadedManifestData } | { ok: false; failure: HarnessFailure };

export type ChildMessage =
  | { type: 'ready'; pid: number }
  | { type: 'load-result'; id: number; result: LoadReply }
  | { type: 'run-result'; id: number; results: PhaseResult[]; childMs: number; isolateLoads: number };

/** Exit code a child uses after isolated-vm reports a catastrophic error (the process must not go on). */
export const CATASTROPHIC_EXIT_CODE = 70;
