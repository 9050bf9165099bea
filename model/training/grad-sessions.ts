// 'grad' sessions (loss + flat gradient of a batch at given parameters, one intra-op thread), cached per
// batch shape: the data-parallel half-batches and the micro-batches of gradient accumulation run on these.
import * as ort from 'onnxruntime-node';
import { ModelConfig } from '../config';
import { buildTrainGraph } from '../graph/training-graph';
import { createSession, RuntimeOptions } from '../runtime/ort-session';
import type { PackedBatch } from './batch';

/** Sessions kept per trainer: each holds its own plan and arena, so memory grows with distinct shapes. */
export const MAX_SESSIONS = 6;

/** 'grad' sessions (loss + flat gradient) per batch shape, on one intra-op thread. */
export class GradSessions {
  private readonly sessions = new Map<string, Promise<ort.InferenceSession>>();

  constructor(
    private readonly config: ModelConfig,
    private readonly options: RuntimeOptions,
  ) {}

  async run(params: Float32Array, packed: PackedBatch): Promise<{ loss: number; grad: Float32Array }> {
    const key = `${packed.rows}x${packed.seqLen}`;
    let s = this.sessions.get(key);
    if (!s) {
      if (this.sessions.size >= MAX_SESSIONS) {
        const [oldest, old] = this.sessions.entries().next().value as [string, Promise<ort.InferenceSession>];
        this.sessions.delete(oldest);
        void old.then((x) => x.release()).catch(() => undefined);
      }
      const long = packed.seqLen >= 512;
      s = createSession(buildTrainGraph(this.config, { rows: packed.rows, seqLen: packed.seqLen, mode: 'grad', recomputeAttention: long }), { ...this.options, threads: 1 });
      this.sessions.set(key, s);
    }
    const shape = [packed.rows, packed.seqLen];
    const out = await (await s).run({
      params: new ort.Tensor('float32', params, [params.length]),
      tokens: new ort.Tensor('int32', packed.tokens, shape),
      targets: new ort.Tensor('int32', packed.targets, shape),
      weights: new ort.Tensor('float32', packed.weights, shape),
    });
    return { loss: Number(out.loss.data[0]), grad: out.grad.data as Float32Array };
  }

  async close(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    for (const s of all) await (await s).release();
  }
}
