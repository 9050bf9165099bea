// Checkpoints: config + weights + AdamW state + step in one canonical byte encoding (fixed field order, no
// timestamps, so equal contents hash equal), stored through the content-addressed ArtifactStore (atomic
// rename: a crashed write leaves nothing that loads). Decoding verifies magic, lengths and an inner sha256.
import { createHash } from 'node:crypto';
import { endianness } from 'node:os';
import type { ArtifactRef } from '../../store/artifact-ref';
import type { ArtifactStore } from '../../store/artifact-store';
import { ModelConfig, paramLayout } from '../config';
import { WhaleError } from '../../common/errors';

export interface Checkpoint {
  config: ModelConfig;
  params: Float32Array;
  adamM: Float32Array;
  adamV: Float32Array;
  /** Optimizer steps taken (AdamW bias corrections continue from here). */
  step: number;
}

/** Bytes that are not a WHALE checkpoint (truncated, foreign, wrong kind): the store verified their hash, so they were given as they are. */
export class CheckpointFormatError extends WhaleError {
  override name = 'CheckpointFormatError';
  readonly fault = 'user-input';
}

const MAGIC = 'WHALE-CKPT\n';
const FORMAT_VERSION = 1;

function canonicalConfig(c: ModelConfig): ModelConfig {
  // Fixed key order: JSON.stringify then yields the same bytes for equal configs.
  return { vocabSize: c.vocabSize, contextLength: c.contextLength, dModel: c.dModel, nLayers: c.nLayers, nHeads: c.nHeads, layerNormEps: c.layerNormEps };
}

function bytesOf(a: Float32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

export function encodeCheckpoint(ck: Checkpoint): Uint8Array {
  if (endianness() !== 'LE') throw new Error('checkpoints are little-endian float32; this host is big-endian');
  const total = paramLayout(ck.config).total;
  for (const [name, a] of [['params', ck.params], ['adamM', ck.adamM], ['adamV', ck.adamV]] as const) {
    if (a.length !== total) throw new Error(`checkpoint ${name} has ${a.length} values; config needs ${total}`);
  }
  if (!Number.isInteger(ck.step) || ck.step < 0) throw new Error(`checkpoint step must be a non-negative integer, got ${ck.step}`);
  const body = new Uint8Array(3 * total * 4);
  body.set(bytesOf(ck.params), 0);
  body.set(bytesOf(ck.adamM), total * 4);
  body.set(bytesOf(ck.adamV), 2 * total * 4);
  const header = JSON.stringify({ format: FORMAT_VERSION, config: canonicalConfig(ck.config), step: ck.step, paramCount: total, bodySha256: createHash('sha256').update(body).digest('hex') });
  const magic = new TextEncoder().encode(MAGIC);
  const head = new TextEncoder().encode(header);
  const out = new Uint8Array(magic.length + 4 + head.length + body.length);
  out.set(magic, 0);
  new DataView(out.buffer).setUint32(magic.length, head.length, true);
  out.set(head, magic.length + 4);
  out.set(body, magic.length + 4 + head.length);
  return out;
}

export function decodeCheckpoint(bytes: Uint8Array, what = 'checkpoint'): Checkpoint {
  const magic = new TextEncoder().encode(MAGIC);
  const fail = (why: string) => new CheckpointFormatError(`${what} is not a loadable WHALE checkpoint: ${why}. Re-save it from a trainer, or point at the right artifact.`);
  if (bytes.length < magic.length + 4 || new TextDecoder().decode(bytes.subarray(0, magic.length)) !== MAGIC) throw fail('missing header magic');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headLen = view.getUint32(magic.length, true);
  const bodyStart = magic.length + 4 + headLen;
  if (bodyStart > bytes.length) throw fail(`truncated header (${bytes.length} bytes)`);
  let header: { format: number; config: unknown; step: number; paramCount: number; bodySha256: string };
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(magic.length + 4, bodyStart)));
  } catch {
    throw fail('header is not valid JSON');
  }
  if (header.format !== FORMAT_VERSION) throw fail(`format version ${header.format}, this runtime reads ${FORMAT_VERSION}`);
  const parsed = ModelConfig.safeParse(header.config);
  if (!parsed.success) throw fail(`invalid config (${parsed.error.issues.map((i) => i.message).join('; ')})`);
  const total = paramLayout(parsed.data).total;
  if (header.paramCount !== total) throw fail(`header says ${header.paramCount} params, config implies ${total}`);
  const expected = bodyStart + 3 * total * 4;
  if (bytes.length !== expected) throw fail(`expected ${expected} bytes, found ${bytes.length} (truncated or padded)`);
  const body = bytes.subarray(bodyStart);
  const sha = createHash('sha256').update(body).digest('hex');
  if (sha !== header.bodySha256) throw fail(`weights sha256 ${sha} does not match the header's ${header.bodySha256} (corrupted)`);
  // Copy into fresh aligned arrays (the input's offset need not be 4-byte aligned).
  const floats = (i: number) => {
    const copy = new Uint8Array(total * 4);
    copy.set(body.subarray(i * total * 4, (i + 1) * total * 4));
    return new Float32Array(copy.buffer);
  };
  return { config: parsed.data, params: floats(0), adamM: floats(1), adamV: floats(2), step: header.step };
}

export async function saveCheckpoint(store: ArtifactStore, ck: Checkpoint): Promise<ArtifactRef> {
  return store.put('checkpoint', encodeCheckpoint(ck));
}

/** Loads and verifies a checkpoint (the store checks the content hash; decoding checks the structure). */
export async function loadCheckpoint(store: ArtifactStore, ref: ArtifactRef): Promise<Checkpoint> {
  if (ref.kind !== 'checkpoint') throw new CheckpointFormatError(`artifact ${ref.uri} is a ${ref.kind}, not a checkpoint`);
  const bytes = await store.get(ref);
  return decodeCheckpoint(bytes, `checkpoint ${ref.uri}`);
}
