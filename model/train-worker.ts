// Worker-thread entry of the Trainer: owns one TrainerCore and answers step / accumulate / state / close requests.
import { workerData } from 'node:worker_threads';
import type { Checkpoint } from './checkpoint';
import type { RuntimeOptions } from './ort-session';
import { TrainerCore } from './trainer-core';
import type { PackedBatch, StepHyperparams } from './trainer-batch';
import { serveRequests } from './worker-client';

export type TrainerRequest =
  | { op: 'step'; packed: PackedBatch; hyper: StepHyperparams }
  | { op: 'accumulate'; packs: PackedBatch[]; hyper: StepHyperparams }
  | { op: 'state' }
  | { op: 'close' };

const { state, options } = workerData as { state: Checkpoint; options: RuntimeOptions };
const core = new TrainerCore(state, options);

serveRequests<TrainerRequest>(async (req) => {
  if (req.op === 'step') return [await core.step(req.packed, req.hyper), []];
  if (req.op === 'accumulate') return [await core.accumulate(req.packs, req.hyper), []];
  if (req.op === 'state') {
    const s = core.state();
    return [s, [s.params.buffer, s.adamM.buffer, s.adamV.buffer] as ArrayBuffer[]];
  }
  await core.close();
  return [null, []];
});
