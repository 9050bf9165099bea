// Worker-thread entry of the Trainer: owns one TrainerCore and answers step / accumulate / state / close requests.
import { workerData } from 'node:worker_threads';
import type { Checkpoint } from '../checkpoints/checkpoint';
import type { RuntimeOptions } from '../runtime/ort-session';
import { serveRequests } from '../runtime/worker-client';
import { TrainerCore } from './core';
import type { TrainerRequest } from './protocol';

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
