// The messages the trainer's worker threads answer: the engine's worker (core-worker.ts) and the
// data-parallel gradient helper (grad-helper-worker.ts). Types only, so no module pair imports each other.
import type { PackedBatch, StepHyperparams } from './batch';

export type TrainerRequest =
  | { op: 'step'; packed: PackedBatch; hyper: StepHyperparams }
  | { op: 'accumulate'; packs: PackedBatch[]; hyper: StepHyperparams }
  | { op: 'state' }
  | { op: 'close' };

export type GradRequest = { op: 'grad'; params: Float32Array; packed: PackedBatch } | { op: 'close' };
