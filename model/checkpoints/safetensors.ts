// The safetensors file format (the Hugging Face weight format): an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the raw little-endian data. Written with
// sorted names and no timestamps, so equal tensors give equal bytes.
import { WhaleError } from '../../common/errors';

export interface Tensor {
  shape: number[];
  data: Float32Array;
}

/** A file given as safetensors is not one WHALE can read (too short, bad header, unsupported dtype). */
export class SafetensorsError extends WhaleError {
  override name = 'SafetensorsError';
  readonly fault = 'user-input';
}

/** Encodes float32 tensors (names sorted; header padded with spaces to 8 bytes, as the reference writer does). */
export function encodeSafetensors(tensors: Record<string, Tensor>, metadata: Record<string, string> = { format: 'pt' }): Uint8Array {
  const names = Object.keys(tensors).sort();
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const name of names) {
    const t = tensors[name];
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new SafetensorsError(`tensor ${name}: shape ${JSON.stringify(t.shape)} holds ${n} values, data has ${t.data.length}`);
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + n * 4] };
    offset += n * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((Buffer.byteLength(json) + 8) % 8)) % 8);
  const head = Buffer.from(json, 'utf8');
  const out = new Uint8Array(8 + head.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const name of names) {
    const d = tensors[name].data;
    out.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength), at);
    at += d.byteLength;
  }
  return out;
}

function bf16ToF32(bits: number): number {
  const buf = new DataView(new ArrayBuffer(4));
  buf.setUint32(0, bits << 16, true);
  return buf.getFloat32(0, true);
}

function f16ToF32(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Decodes a safetensors file to float32 tensors (F32, F16 and BF16 are read; other dtypes are refused). */
export function decodeSafetensors(bytes: Uint8Array, what = 'safetensors file'): Record<string, Tensor> {
  if (bytes.length < 8) throw new SafetensorsError(`${what} is too short to be a safetensors file`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headLen = Number(view.getBigUint64(0, true));
  if (8 + headLen > bytes.length) throw new SafetensorsError(`${what}: header length ${headLen} runs past the end of the file`);
  let header: Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] } | Record<string, string>>;
  try {
    header = JSON.parse(Buffer.from(bytes.subarray(8, 8 + headLen)).toString('utf8'));
  } catch {
    throw new SafetensorsError(`${what}: the header is not JSON (not a safetensors file?)`);
  }
  const dataStart = 8 + headLen;
  const out: Record<string, Tensor> = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const { dtype, shape, data_offsets: [begin, end] } = entry as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const n = shape.reduce((a, b) => a * b, 1);
    const width = dtype === 'F32' ? 4 : dtype === 'F16' || dtype === 'BF16' ? 2 : 0;
    if (!width) throw new SafetensorsError(`${what}: tensor ${name} is ${dtype}; only F32, F16 and BF16 weights can be read`);
    if (end - begin !== n * width || dataStart + end > bytes.length) throw new SafetensorsError(`${what}: tensor ${name} has a bad byte range [${begin}, ${end})`);
    const data = new Float32Array(n);
    const at = dataStart + begin;
    for (let i = 0; i < n; i++) {
      if (width === 4) data[i] = view.getFloat32(at + 4 * i, true);
      else data[i] = dtype === 'BF16' ? bf16ToF32(view.getUint16(at + 2 * i, true)) : f16ToF32(view.getUint16(at + 2 * i, true));
    }
    out[name] = { shape, data };
  }
  return out;
}
