// The Trainer: public face of training. Batches are validated and packed here; the ORT work runs in a
// worker thread (core-worker.ts hosting core.ts), so a step never blocks this thread's event loop and activities
// keep heartbeating. Parameters, AdamW moments and step count live in the worker; state() fetches a copy.
import * as path from 'node:path';
import type { ArtifactRef } from '../../store/artifact-ref';
import type { ArtifactStore } from '../../store/artifact-store';
import { Checkpoint, loadCheckpoint, saveCheckpoint } from '../checkpoints/checkpoint';
import { ModelConfig, paramLayout } from '../config';
import { initParams } from '../checkpoints/init-params';
import type { RuntimeOptions } from '../runtime/ort-session';
import { packBatch, StepHyperparams, StepResult, TrainBatch } from './batch';
import { WorkerClient } from '../runtime/worker-client';
import type { TrainerRequest } from './protocol';

export { packBatch, bucketRows } from './batch';
export type { TrainBatch, StepHyperparams, StepResult, StepPhases, PackedBatch } from './batch';

/** Adds the main thread's packing time and the worker round trip not spent in graphs to a step's phases. */
function withPhases(r: StepResult, packMs: number, requestMs: number): StepResult {
  const p = r.phases ?? { packMs: 0, graphMs: 0, optimizerMs: 0, transferMs: 0 };
  return { ...r, phases: { ...p, packMs, transferMs: Math.max(0, requestMs - p.graphMs - p.optimizerMs) } };
}

export const DEFAULT_HYPERPARAMS: StepHyperparams = { lr: 1e-3, weightDecay: 0.1, clipNorm: 1, beta1: 0.9, beta2: 0.95, eps: 1e-8 };

/** The trainer's whole state is a checkpoint. */
export type TrainerState = Checkpoint;

export class Trainer {
  private readonly client: WorkerClient<TrainerRequest>;
  /** Optimizer steps taken (mirrors the worker's count). */
  stepCount: number;

  constructor(
    readonly config: ModelConfig,
    state: { params: Float32Array; adamM?: Float32Array; adamV?: Float32Array; step?: number },
    readonly options: RuntimeOptions = {},
  ) {
    const total = paramLayout(config).total;
    const initial: Checkpoint = { config, params: state.params, adamM: state.adamM ?? new Float32Array(total), adamV: state.adamV ?? new Float32Array(total), step: state.step ?? 0 };
    for (const [name, arr] of [['params', initial.params], ['adamM', initial.adamM], ['adamV', initial.adamV]] as const) {
      if (arr.length !== total) throw new Error(`${name} has ${arr.length} values but this config needs ${total}: is the checkpoint for another model config?`);
    }
    this.stepCount = initial.step;
    this.client = new WorkerClient<TrainerRequest>(path.join(__dirname, 'core-worker'), { state: initial, options }, 'trainer');
  }

  static fromSeed(config: ModelConfig, seed: number, options: RuntimeOptions = {}): Trainer {
    return new Trainer(config, { params: initParams(config, seed) }, options);
  }

  static fromState(state: TrainerState, options: RuntimeOptions = {}): Trainer {
    return new Trainer(state.config, { params: state.params.slice(), adamM: state.adamM.slice(), adamV: state.adamV.slice(), step: state.step }, options);
  }

  /** Resumes from a stored checkpoint (weights, AdamW moments and step). */
  static async loadCheckpoint(store: ArtifactStore, ref: ArtifactRef, options: RuntimeOptions = {}): Promise<Trainer> {
    return Trainer.fromState(await loadCheckpoint(store, ref), options);
  }

  async saveCheckpoint(store: ArtifactStore): Promise<ArtifactRef> {
    return saveCheckpoint(store, await this.state());
  }

  /** A copy of the weights, AdamW moments and step (after every step requested so far). */
  async state(): Promise<TrainerState> {
    const s = await this.client.request<Checkpoint>({ op: 'state' });
    return { ...s, config: this.config };
  }

  /** One AdamW step on a batch; throws (keeping the old weights) on a malformed batch or a non-finite loss. */
  async step(batch: TrainBatch, hyper: StepHyperparams = DEFAULT_HYPERPARAMS): Promise<StepResult> {
    const t0 = performance.now();
    const packed = packBatch(this.config, batch);
    const t1 = performance.now();
    const result = await this.client.request<StepResult>({ op: 'step', packed, hyper });
    this.stepCount++;
    return withPhases(result, t1 - t0, performance.now() - t1);
  }

  /**
   * One AdamW step over several micro-batches (gradient accumulation): the loss is sum(w * nll) / sum(w)
   * over all their rows, as if they were one batch, while memory holds one micro-batch at a time.
   */
  async accumulateStep(batches: readonly TrainBatch[], hyper: StepHyperparams = DEFAULT_HYPERPARAMS): Promise<StepResult> {
    if (batches.length === 0) throw new Error('accumulateStep needs at least one micro-batch');
    const t0 = performance.now();
    const packs = batches.map((b) => packBatch(this.config, b));
    const t1 = performance.now();
    const result = await this.client.request<StepResult>({ op: 'accumulate', packs, hyper });
    this.stepCount++;
    return withPhases(result, t1 - t0, performance.now() - t1);
  }

  async close(): Promise<void> {
    await this.client.close({ op: 'close' });
  }
}
