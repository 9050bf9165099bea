// Public API of the model runtime: a small GPT-2-style byte-level LM trained and sampled by onnxruntime-node.
//
//   Configs       modelConfig('tiny' | 'embedded-1m' | 'embedded-3m' | {...}) -> ModelConfig (zod-validated);
//                 PRESETS, LENGTH_BUCKETS, countParams(config), paramLayout(config).
//   Weights       initParams(config, seed) -> Float32Array (deterministic GPT-2 initialisation).
//   Training      Trainer.fromSeed(config, seed, { threads, deterministic }) or Trainer.fromState(checkpoint)
//                 or await Trainer.loadCheckpoint(store, ref, opts);
//                 await trainer.step({ tokens: rows, lossWeights: rows }, { lr, weightDecay, clipNorm, beta1,
//                 beta2, eps }) -> { loss, gradNorm, tokens, weightedTokens }. lossWeights[r][i] weights the
//                 loss of predicting tokens[r][i] (index 0 is never a target); loss = sum(w*nll)/sum(w).
//                 Rows/lengths are padded to buckets (one ORT session per shape, LRU of 6). ORT runs in a worker
//                 thread, so step() leaves the event loop free. await trainer.state() -> Checkpoint (a
//                 copy); await trainer.saveCheckpoint(store) -> ArtifactRef; await trainer.close().
//   Sampling      await OrtSampler.create(config, params, { threads, maxBatchRows }) or
//                 OrtSampler.fromCheckpoint(checkpoint, opts): implements ModelBackend (model/backend.ts);
//                 runs in a worker thread; await sampler.close().
//   Checkpoints   await saveCheckpoint(store, checkpoint) -> ArtifactRef; await loadCheckpoint(store, ref);
//                 encodeCheckpoint / decodeCheckpoint (canonical bytes); CheckpointFormatError.
//   Export        await exportForTransformersJs(checkpoint, dir): config.json, tokenizer files, onnx/model.onnx.
//
// Deterministic mode (every ORT session on 1 thread; the trainer splits rows across `threads` worker threads
// and combines gradients in a fixed order) is bit-identical run to run at equal `threads`. Sampling is
// seeded per request; a request's samples can differ in rare near-ties between batch compositions, since
// batched matmuls may round differently from single-row ones.
export { modelConfig, ModelConfig, PRESETS, LENGTH_BUCKETS, countParams, paramLayout, forwardFlopsPerToken, bucketLength } from './config';
export type { PresetName, ParamLayout, ParamSpec } from './config';
export { initParams } from './checkpoints/init-params';
export { Trainer, DEFAULT_HYPERPARAMS } from './training/trainer';
export type { TrainBatch, StepHyperparams, StepResult, StepPhases, TrainerState } from './training/trainer';
export type { RuntimeOptions } from './runtime/ort-session';
export { OrtSampler } from './sampling/sampler';
export type { SamplerOptions, SamplerStats } from './sampling/sampler';
export { saveCheckpoint, loadCheckpoint, encodeCheckpoint, decodeCheckpoint, CheckpointFormatError } from './checkpoints/checkpoint';
export type { Checkpoint } from './checkpoints/checkpoint';
export { exportForTransformersJs } from './checkpoints/transformers-js-export';
export * from './tokenizer';
export type { GenerateRequest, GenerateResult, ModelBackend, StopReason } from './backend';
