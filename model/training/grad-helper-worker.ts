// Worker-thread entry of the trainer's gradient helper: for data-parallel steps it computes the loss and
// flat gradient of half a batch (1 intra-op thread) with the parameters it is sent.
import { workerData } from 'node:worker_threads';
import { ModelConfig } from '../config';
import type { RuntimeOptions } from '../runtime/ort-session';
import { serveRequests } from '../runtime/worker-client';
import { GradSessions } from './grad-sessions';
import type { GradRequest } from './protocol';

const { config, options } = workerData as { config: ModelConfig; options: RuntimeOptions };
const sessions = new GradSessions(config, options);

serveRequests<GradRequest>(async (req) => {
  if (req.op === 'close') {
    await sessions.close();
    return [null, []];
  }
  const out = await sessions.run(req.params, req.packed);
  return [out, [out.grad.buffer as ArrayBuffer]];
});
