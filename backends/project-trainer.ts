// The project's own trainer behind the external-trainer protocol (`whale train-external`): the same RSFT
// epoch as the embedded fine-tune step (training/rsft.ts), from a request's dataset and base checkpoint file
// to a checkpoint file in the request's output directory. Equal requests in deterministic mode give the same
// bytes as the embedded step.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_HYPERPARAMS, Trainer, decodeCheckpoint, encodeCheckpoint } from '../model';
import { runSftEpoch } from '../training/rsft';
import { sha256Hex, writeFileAtomic } from '../store/artifact-store';
import { TRAINER_PROTOCOL, TrainRequest, examplesFromDataset, minibatchUnitOf, type TrainResponse } from './trainer-protocol';
import { WhaleError } from '../common/errors';

/** The request is at fault (exit status 2 / HTTP 400): retrying it cannot help. */
export class TrainRequestError extends WhaleError {
  override name = 'TrainRequestError';
  readonly fault = 'user-input';
}

export function parseTrainRequest(json: unknown): TrainRequest {
  const parsed = TrainRequest.safeParse(json);
  if (!parsed.success) throw new TrainRequestError(`not a ${TRAINER_PROTOCOL} (or /1) request: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

export async function trainFromRequest(request: TrainRequest, opts: { threads: number; log?: (line: string) => void }): Promise<TrainResponse> {
  const base = request.base_checkpoint;
  if (!base.path) throw new TrainRequestError(`base checkpoint ${base.ref.uri} is a pointer to served weights (${base.model}); this trainer trains WHALE checkpoints only`);
  let dataset: string;
  let baseBytes: Buffer;
  try {
    dataset = await fs.readFile(request.dataset.path, 'utf8');
    baseBytes = await fs.readFile(base.path);
  } catch (err) {
    throw new TrainRequestError(`cannot read the request's files (${(err as Error).message}): the trainer must see the caller's shared artifact directory`);
  }
  if (sha256Hex(dataset) !== request.dataset.sha256) throw new TrainRequestError(`dataset ${request.dataset.path} does not match its sha256 ${request.dataset.sha256}`);
  if (sha256Hex(baseBytes) !== base.ref.sha256) throw new TrainRequestError(`base checkpoint ${base.path} does not match its sha256 ${base.ref.sha256}`);
  let examples;
  let state;
  try {
    examples = examplesFromDataset(dataset);
    state = decodeCheckpoint(baseBytes, `base checkpoint ${base.path}`);
  } catch (err) {
    throw new TrainRequestError((err as Error).message);
  }
  const hp = request.hyperparameters;
  const trainer = Trainer.fromState(state, { threads: opts.threads, deterministic: request.deterministic });
  try {
    const epoch = await runSftEpoch(trainer, examples, {
      minibatchSize: hp.minibatch_size,
      unit: minibatchUnitOf(request),
      hyper: { ...DEFAULT_HYPERPARAMS, lr: hp.learning_rate, weightDecay: hp.weight_decay, clipNorm: hp.clip_norm },
      seed: request.seed,
      step: request.step,
      onMinibatch: async (done, total, loss) => opts.log?.(`[train-external] step ${request.step} minibatch ${done}/${total} loss ${loss.toFixed(4)}`),
    });
    const bytes = encodeCheckpoint(await trainer.state());
    const file = path.join(request.output_dir, `checkpoint-${sha256Hex(bytes).slice(0, 16)}.ckpt`);
    await writeFileAtomic(file, bytes);
    return { protocol: request.protocol, checkpoint: { path: file }, metrics: { minibatches: epoch.minibatches, mean_loss: epoch.meanLoss, trained_tokens: epoch.tokens } };
  } finally {
    await trainer.close();
  }
}
