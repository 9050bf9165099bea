// OrtSampler: the embedded ModelBackend. The sampling engine (core.ts: shared prefill,
// fixed-slot KV cache, seeded top-k/top-p) runs in a worker thread, because onnxruntime-node runs
// synchronously on the calling thread; the main event loop stays free while a batch generates.
import * as path from 'node:path';
import type { GenerateRequest, GenerateResult, ModelBackend } from '../backend';
import type { Checkpoint } from '../checkpoints/checkpoint';
import { ModelConfig, paramLayout } from '../config';
import { WorkerClient } from '../runtime/worker-client';
import type { SamplerOptions, SamplerRequest } from './types';

export type { SamplerOptions } from './types';

export interface SamplerStats {
  /** Distinct prompts prefilled (identical prompts share one prefill). */
  prefilledPrompts: number;
  prefillRuns: number;
  decodeSteps: number;
  generatedTokens: number;
}

export class OrtSampler implements ModelBackend {
  /** Counters (as of the last generate() call), for tests and benchmarks. */
  readonly stats: SamplerStats = { prefilledPrompts: 0, prefillRuns: 0, decodeSteps: 0, generatedTokens: 0 };

  private constructor(
    readonly config: ModelConfig,
    readonly maxContext: number,
    private readonly client: WorkerClient<SamplerRequest>,
  ) {}

  /** Builds the decoder sessions (in the worker) from a parameter vector; rejects if they cannot be built. */
  static async create(config: ModelConfig, params: Float32Array, options: SamplerOptions = {}): Promise<OrtSampler> {
    const total = paramLayout(config).total;
    if (params.length !== total) throw new Error(`parameter vector has ${params.length} values, config needs ${total}`);
    const client = new WorkerClient<SamplerRequest>(path.join(__dirname, 'core-worker'), { config, params, options }, 'sampler');
    const maxContext = await client.request<number>({ op: 'ready' });
    return new OrtSampler(config, maxContext, client);
  }

  static fromCheckpoint(ck: Pick<Checkpoint, 'config' | 'params'>, options: SamplerOptions = {}): Promise<OrtSampler> {
    return OrtSampler.create(ck.config, ck.params, options);
  }

  /**
   * Results are in request order; calls are served one at a time. `cancel[i]`, when it aborts, stops row i
   * at the next decode step (its result has `cancelled: true`): the flags live in shared memory because the worker's
   * decode loop does not yield to its message queue between steps.
   */
  async generate(requests: GenerateRequest[], cancel?: ReadonlyArray<AbortSignal | undefined>): Promise<GenerateResult[]> {
    const flags = cancel?.some(Boolean) ? new Int32Array(new SharedArrayBuffer(4 * requests.length)) : undefined;
    // One listener per distinct signal (a request's rows share its signal).
    const rowsOf = new Map<AbortSignal, number[]>();
    cancel?.forEach((signal, i) => signal && rowsOf.set(signal, [...(rowsOf.get(signal) ?? []), i]));
    const unhook: Array<() => void> = [];
    for (const [signal, rows] of rowsOf) {
      const onAbort = () => rows.forEach((i) => Atomics.store(flags as Int32Array, i, 1));
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        unhook.push(() => signal.removeEventListener('abort', onAbort));
      }
    }
    try {
      const out = await this.client.request<{ results: GenerateResult[]; stats: SamplerStats }>({ op: 'generate', requests, ...(flags ? { cancel: flags } : {}) });
      Object.assign(this.stats, out.stats);
      return out.results;
    } finally {
      for (const u of unhook) u();
    }
  }

  async close(): Promise<void> {
    await this.client.close({ op: 'close' });
  }
}
