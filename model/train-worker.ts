// Worker-thread entry of the Trainer: owns one TrainerCore and answers {id, op} requests from the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import type { Checkpoint } from './checkpoint';
import type { RuntimeOptions } from './ort-session';
import { TrainerCore } from './trainer-core';
import type { PackedBatch, StepHyperparams } from './trainer-batch';

export type TrainerRequest = { id: number; op: 'step'; packed: PackedBatch; hyper: StepHyperparams } | { id: number; op: 'state' } | { id: number; op: 'close' };
export type TrainerResponse = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };

const port = parentPort;
if (!port) throw new Error('model/train-worker.ts must run as a worker thread');
const { state, options } = workerData as { state: Checkpoint; options: RuntimeOptions };
const core = new TrainerCore(state, options);
// Requests run one at a time, in arrival order.
let chain: Promise<unknown> = Promise.resolve();

port.on('message', (req: TrainerRequest) => {
  chain = chain.then(async () => {
    try {
      if (req.op === 'step') port.postMessage({ id: req.id, ok: true, value: await core.step(req.packed, req.hyper) });
      else if (req.op === 'state') {
        const s = core.state();
        port.postMessage({ id: req.id, ok: true, value: s }, [s.params.buffer, s.adamM.buffer, s.adamV.buffer] as ArrayBuffer[]);
      } else {
        await core.close();
        port.postMessage({ id: req.id, ok: true, value: null });
      }
    } catch (err) {
      port.postMessage({ id: req.id, ok: false, message: err instanceof Error ? err.message : String(err) });
    }
  });
});
