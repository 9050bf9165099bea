// Types shared by the sampler's main-thread face, its worker entry, the engine and the slot cache (kept
// here so that no two of those modules import each other).
import type { GenerateRequest } from '../backend';
import type { RuntimeOptions } from '../runtime/ort-session';

export interface SamplerOptions extends RuntimeOptions {
  /** Rows decoded together; more requests run in waves (bounds cache memory). Default 64. */
  maxBatchRows?: number;
}

/** One prompt's prefill: row `row` of a padded batch whose K/V are [rows, H, width, hd] per layer. */
export interface Prefill {
  keys: Float32Array[];
  values: Float32Array[];
  row: number;
  width: number;
  lastLogits: Float32Array; // [V]
}

/** `cancel`: one flag per request in shared memory; the main thread sets a flag to stop that row between decode steps. */
export type SamplerRequest = { op: 'ready' } | { op: 'generate'; requests: GenerateRequest[]; cancel?: Int32Array } | { op: 'close' };
