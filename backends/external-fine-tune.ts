// The external fine-tune backend: a step through an external trainer (a command or an HTTP endpoint
// speaking whale-external-trainer/2). Writes the step's dataset and request into the shared artifact
// directory, waits for the trainer while heartbeating (cancellation kills the command or aborts the request),
// and stores the new checkpoint. Idempotent through the shared step (fine-tune-step.ts); a retry re-runs the
// whole step (an external trainer has no minibatch cursor to resume from).
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { decodeCheckpoint } from '../model';
import type { FineTuneStepInput, FineTuneStepResult } from '../activities/types';
import type { FineTuneBackend, FineTuneContext } from '../activities/model-backends';
import type { ArtifactStore } from '../store/artifact-store';
import { sha256Hex, writeFileAtomic } from '../store/artifact-store';
import type { ArtifactRef } from '../store/artifact-ref';
import type { ExternalTrainerConfig } from './config';
import { putCheckpointPointer, readCheckpointPointer } from './checkpoint-pointer';
import { idempotentFineTuneStep, unchangedResult } from './fine-tune-step';
import { TRAINER_PROTOCOL, TrainResponse, datasetFromTrajectories, datasetToJsonl, type TrainRequest } from './trainer-protocol';

export interface ExternalFineTuneDeps {
  store: ArtifactStore;
  /** The shared artifact directory (the store's root): datasets and trainer outputs go under it. */
  artifactRoot: string;
  trainer: ExternalTrainerConfig;
  env?: NodeJS.ProcessEnv;
}

/** A trainer's own fault (bad response, rejected request): retrying the same step would fail the same way. */
function trainerFault(message: string): never {
  throw ApplicationFailure.nonRetryable(message, 'ExternalTrainerError');
}

export function runExternalFineTuneStep(deps: ExternalFineTuneDeps, input: FineTuneStepInput, ctx: FineTuneContext): Promise<FineTuneStepResult> {
  return idempotentFineTuneStep(deps.store, input, async ({ inputKey, trajectories, accepted, calls }) => {
    const records = datasetFromTrajectories(trajectories, input.acceptThreshold);
    if (records.length === 0) return unchangedResult(input, calls);
    const unit = input.minibatchUnit ?? 'calls';
    const dir = path.join(deps.artifactRoot, 'external-trainer', inputKey.slice(0, 32));
    await fs.mkdir(dir, { recursive: true });
    const jsonl = datasetToJsonl(records);
    await writeFileAtomic(path.join(dir, 'dataset.jsonl'), jsonl);
    await deps.store.put('dataset', jsonl);
    const pointer = await readCheckpointPointer(deps.store, input.checkpoint);
    const request: TrainRequest = {
      protocol: TRAINER_PROTOCOL, run_id: input.runId, step: input.step, seed: input.seed,
      dataset: { path: path.join(dir, 'dataset.jsonl'), sha256: sha256Hex(jsonl), records: records.length },
      base_checkpoint: { ref: input.checkpoint, path: pointer ? null : objectPath(deps.artifactRoot, input.checkpoint), model: pointer?.model ?? null },
      hyperparameters: { learning_rate: input.learningRate, minibatch_size: input.minibatchSize, minibatch_unit: unit, weight_decay: input.weightDecay, clip_norm: input.clipNorm, epochs: 1 },
      deterministic: input.deterministic,
      output_dir: dir,
    };
    await writeFileAtomic(path.join(dir, 'request.json'), JSON.stringify(request, null, 2));
    const response = await callTrainer(deps, request, ctx);
    const checkpoint = await ingestCheckpoint(deps.store, response, pointer?.model);
    return {
      checkpoint, updated: true, acceptedTrajectories: accepted.length,
      acceptedTokens: response.metrics?.trained_tokens ?? records.reduce((a, r) => a + (r.completion_token_ids?.length ?? 0), 0),
      minibatches: response.metrics?.minibatches ?? Math.ceil((unit === 'calls' ? records.length : new Set(records.map((r) => r.trajectory_id)).size) / input.minibatchSize),
      meanLoss: response.metrics?.mean_loss ?? null, resumedFromMinibatch: 0, ...calls,
    };
  });
}

/** The store's object layout (DirectoryArtifactStore): objects/<2 hex>/<62 hex>. */
function objectPath(root: string, ref: ArtifactRef): string {
  return path.join(root, 'objects', ref.sha256.slice(0, 2), ref.sha256.slice(2));
}

async function ingestCheckpoint(store: ArtifactStore, response: TrainResponse, parent: string | undefined): Promise<ArtifactRef> {
  const c = response.checkpoint;
  if ('ref' in c) {
    if (!(await store.has(c.ref))) trainerFault(`the external trainer answered checkpoint ${c.ref.uri}, which is not in the shared artifact store`);
    return c.ref;
  }
  if ('model' in c) return putCheckpointPointer(store, { whaleCheckpointPointer: 1, model: c.model, ...(c.uri ? { uri: c.uri } : {}), ...(parent ? { parent } : {}) });
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(c.path);
  } catch (err) {
    return trainerFault(`the external trainer answered checkpoint path ${c.path}, which cannot be read here (${(err as Error).message}): its output_dir must be on storage the model worker shares`);
  }
  try {
    decodeCheckpoint(bytes, `external trainer output ${c.path}`);
  } catch (err) {
    trainerFault((err as Error).message);
  }
  return store.put('checkpoint', bytes);
}

function parseResponse(text: string, where: string): TrainResponse {
  const line = text.trim().split('\n').filter((l) => l.trim() !== '').pop() ?? '';
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return trainerFault(`${where}: the response is not JSON (last stdout line: ${JSON.stringify(line.slice(0, 300))})`);
  }
  const parsed = TrainResponse.safeParse(json);
  if (!parsed.success) trainerFault(`${where}: the response does not follow ${TRAINER_PROTOCOL}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** Heartbeats (and checks cancellation) every few seconds while `work` runs; `abort` stops the work. */
async function whileHeartbeating<T>(ctx: FineTuneContext, abort: () => void, work: Promise<T>): Promise<T> {
  const started = Date.now();
  let cancelled: unknown = null;
  const timer = setInterval(() => {
    try {
      ctx.throwIfCancelled();
      ctx.heartbeat({ kind: 'external-fine-tune', elapsedMs: Date.now() - started });
    } catch (err) {
      cancelled = err;
      abort();
    }
  }, 2_000);
  try {
    const value = await work;
    return value;
  } catch (err) {
    throw cancelled ?? err;
  } finally {
    clearInterval(timer);
  }
}

async function callTrainer(deps: ExternalFineTuneDeps, request: TrainRequest, ctx: FineTuneContext): Promise<TrainResponse> {
  const t = deps.trainer;
  const body = JSON.stringify(request);
  if (t.kind === 'http') {
    const key = t.apiKeyEnv ? (deps.env ?? process.env)[t.apiKeyEnv] : undefined;
    const controller = new AbortController();
    const timeout = AbortSignal.timeout(t.timeoutMs);
    const res = await whileHeartbeating(ctx, () => controller.abort(), fetch(t.url, {
      method: 'POST', body, signal: AbortSignal.any([controller.signal, timeout]),
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    }).then(async (r) => ({ status: r.status, text: await r.text() })));
    if (res.status >= 400 && res.status < 500) trainerFault(`external trainer ${t.url} rejected the request (HTTP ${res.status}): ${res.text.slice(0, 500)}`);
    if (res.status >= 500) throw new Error(`external trainer ${t.url} failed (HTTP ${res.status}): ${res.text.slice(0, 500)}`);
    return parseResponse(res.text, `external trainer ${t.url}`);
  }
  const [cmd, ...args] = t.command;
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-4000);
  });
  child.stdin.on('error', () => undefined); // a trainer that exits without reading reports through its exit code
  child.stdin.end(body);
  const killTimer = setTimeout(() => child.kill('SIGKILL'), t.timeoutMs);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', (err) => reject(new Error(`external trainer command ${JSON.stringify(t.command)} could not start: ${err.message}`)));
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  try {
    const { code, signal } = await whileHeartbeating(ctx, () => child.kill('SIGKILL'), exit);
    const where = `external trainer command ${JSON.stringify(t.command.join(' '))}`;
    // Exit status 2: the trainer rejected the request (its fault or ours, not the machine's): no retry.
    if (code === 2) trainerFault(`${where} rejected the request (exit 2): ${stderr.trim().slice(-1500)}`);
    if (code !== 0) throw new Error(`${where} failed (${signal ? `signal ${signal}` : `exit ${code}`}): ${stderr.trim().slice(-1500)}`);
    return parseResponse(stdout, where);
  } finally {
    clearTimeout(killTimer);
  }
}

export function createExternalFineTune(deps: ExternalFineTuneDeps): FineTuneBackend {
  return { fineTuneStep: (input, ctx) => runExternalFineTuneStep(deps, input, ctx) };
}
