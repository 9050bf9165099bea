// ORT session options in one place: thread counts, deterministic mode, optimisation level.
import * as ort from 'onnxruntime-node';

export interface RuntimeOptions {
  /**
   * Threads (default 2, the machine's cores): a session's intra-op threads, and the trainer's data-parallel
   * width (it splits a batch's rows across this many worker threads, each on a 1-thread session).
   */
  threads?: number;
  /**
   * Every session on 1 intra-op and 1 inter-op thread, sequential execution: bit-identical results run to
   * run at the same `threads`. The trainer still uses `threads` cores by splitting rows (see
   * training/core.ts); a 1-row batch and the sampler run on one thread. A single session on several
   * intra-op threads is not bit-reproducible (seen from 512 tokens per row).
   */
  deterministic?: boolean;
  /** ORT graph optimisation (default 'all'). */
  optimization?: 'disabled' | 'basic' | 'extended' | 'all';
  /**
   * ORT's memory pattern (one pre-planned block per run). Default off: the planned block lands on top of
   * the arena's first-run allocations and nearly doubles RSS (1m @ 32x128: 480 vs 784 MiB, 3m @ 4x1024:
   * 1.0 vs 1.6 GiB) with no measurable speed gain.
   */
  memoryPattern?: boolean;
  /**
   * Let ORT's intra-op threads spin between ops. The trainer defaults to on (its big matmuls need the
   * second thread awake: 1m @ 32x128 on 2 threads measured 29k tok/s spinning vs 15k not, on a quiet
   * machine); the sampler defaults to off (its many tiny ops and JS work between steps lose to a spinning
   * thread: 2-3x faster generation under load, equal when quiet). Under heavy outside load spinning
   * also hurts training (10k vs 14k tok/s measured), so a crowded machine may want it off.
   */
  spinning?: boolean;
}

export function sessionOptions(o: RuntimeOptions = {}): ort.InferenceSession.SessionOptions {
  const threads = o.deterministic ? 1 : Math.max(1, o.threads ?? 2);
  return {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: o.optimization ?? 'all',
    enableMemPattern: o.memoryPattern ?? false,
    extra: { session: { intra_op: { allow_spinning: (o.spinning ?? true) ? '1' : '0' } } },
  };
}

export async function createSession(bytes: Uint8Array, o: RuntimeOptions = {}): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(bytes, sessionOptions(o));
}
