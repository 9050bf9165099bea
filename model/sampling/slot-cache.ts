// The sampler's fixed-slot KV cache in JS memory: per layer V as [rows, heads, capacity, head_dim] and K
// transposed as [rows, heads, head_dim, capacity] (so the step graph's q.K^T needs no repacking).
// Row r's position p lives in slot p; a bias row masks slots it has not written. Capacity grows by 64 slots;
// finished rows are compacted away once they are half the batch, so late steps run on live rows only.
import type * as ort from 'onnxruntime-node';
import { Tensor } from 'onnxruntime-node';
import type { GenerateRequest, StopReason } from '../backend';
import { ModelConfig } from '../config';
import { Xoshiro128 } from '../../common/xoshiro';
import { SPECIAL_TOKENS } from '../tokenizer';
import type { Prefill } from './types';

const MASK_NEG = -1e9;
const SLOT_ROUND = 64;

export interface DecodeRow {
  index: number;
  req: GenerateRequest;
  rng: Xoshiro128;
  tokens: number[];
  logprobs: number[];
  /** Position of the next token to feed (its K/V goes to slot pos). */
  pos: number;
  /** `cancelled`: withdrawn by the caller (reported as 'max-new-tokens' with `cancelled: true`). */
  stop: StopReason | 'cancelled' | undefined;
  /** Tokens of generated tail to decode when checking stop strings (0: none). */
  stopTail: number;
}

export class SlotCache {
  rows: DecodeRow[];
  private keys: Float32Array[] = [];
  private values: Float32Array[] = [];
  private bias = new Float32Array(0);
  private capacity = 0;
  private readonly H: number;
  private readonly hd: number;

  constructor(
    private readonly c: ModelConfig,
    rows: DecodeRow[],
    private readonly maxContext: number,
  ) {
    this.rows = rows;
    this.H = c.nHeads;
    this.hd = c.dModel / c.nHeads;
    const longest = Math.max(1, ...rows.map((r) => r.pos + 1));
    this.resize(rows.map((_, i) => i), Math.min(maxContext, Math.ceil(longest / SLOT_ROUND) * SLOT_ROUND));
  }

  private resize(keep: number[], capacity: number): void {
    const { H, hd } = this;
    const n = keep.length;
    const oldCap = this.capacity;
    const fresh = () => new Float32Array(n * H * capacity * hd);
    // Values are [rows, H, C, hd] (a row-head block is C*hd contiguous); keys are [rows, H, hd, C].
    const copyValues = (src: Float32Array) => {
      const dst = fresh();
      keep.forEach((old, r) => {
        for (let h = 0; h < H; h++) dst.set(src.subarray((old * H + h) * oldCap * hd, (old * H + h + 1) * oldCap * hd), (r * H + h) * capacity * hd);
      });
      return dst;
    };
    const copyKeys = (src: Float32Array) => {
      const dst = fresh();
      keep.forEach((old, r) => {
        for (let i = 0; i < H * hd; i++) dst.set(src.subarray((old * H * hd + i) * oldCap, (old * H * hd + i + 1) * oldCap), (r * H * hd + i) * capacity);
      });
      return dst;
    };
    if (oldCap === 0) {
      this.keys = Array.from({ length: this.c.nLayers }, fresh);
      this.values = Array.from({ length: this.c.nLayers }, fresh);
    } else {
      this.keys = this.keys.map(copyKeys);
      this.values = this.values.map(copyValues);
    }
    this.rows = keep.map((i) => this.rows[i]);
    this.capacity = capacity;
    this.bias = new Float32Array(n * capacity).fill(MASK_NEG);
    this.rows.forEach((row, r) => {
      if (!row.stop) this.bias.fill(0, r * capacity, r * capacity + row.pos);
    });
  }

  /** Copies a prefilled prompt's K/V (row `pre.row` of a [rows, H, width, hd] batch) into slots 0..T-1. */
  fillPrompt(slot: number, T: number, pre: Prefill): void {
    const { H, hd, capacity } = this;
    for (let l = 0; l < pre.keys.length; l++) {
      const kSrc = pre.keys[l];
      const kDst = this.keys[l];
      for (let h = 0; h < H; h++) {
        const src = (pre.row * H + h) * pre.width * hd;
        this.values[l].set(pre.values[l].subarray(src, src + T * hd), (slot * H + h) * capacity * hd);
        const dst = (slot * H + h) * hd * capacity;
        for (let t = 0; t < T; t++) for (let i = 0; i < hd; i++) kDst[dst + i * capacity + t] = kSrc[src + t * hd + i];
      }
    }
    this.bias.fill(0, slot * capacity, slot * capacity + T);
  }

  /** Before a step: drop finished rows once they are half the batch; grow capacity if a row needs it. */
  prepare(): void {
    const liveIdx = this.rows.map((r, i) => (r.stop ? -1 : i)).filter((i) => i >= 0);
    const need = Math.max(...liveIdx.map((i) => this.rows[i].pos + 1));
    const grow = need > this.capacity;
    const compact = liveIdx.length <= this.rows.length / 2 && this.rows.length > 1;
    if (grow || compact) {
      // Grow by one rounding unit: attention reads the whole capacity every step, so keep it tight.
      const capacity = grow ? Math.min(this.maxContext, Math.ceil(need / SLOT_ROUND) * SLOT_ROUND) : this.capacity;
      this.resize(compact ? liveIdx : this.rows.map((_, i) => i), capacity);
    }
  }

  feeds(): Record<string, ort.Tensor> {
    const n = this.rows.length;
    const tokens = new Int32Array(n);
    const positions = new Int32Array(n);
    this.rows.forEach((row, r) => {
      // Finished rows still in the batch feed a pad at position 0: cheap, masked, never read.
      tokens[r] = row.stop ? SPECIAL_TOKENS.PAD : row.tokens[row.tokens.length - 1];
      positions[r] = row.stop ? 0 : row.pos;
    });
    const vShape = [n, this.H, this.capacity, this.hd];
    const kShape = [n, this.H, this.hd, this.capacity];
    const f: Record<string, ort.Tensor> = {
      tokens: new Tensor('int32', tokens, [n]),
      positions: new Tensor('int32', positions, [n]),
      cache_bias: new Tensor('float32', this.bias, [n, this.capacity]),
    };
    for (let l = 0; l < this.c.nLayers; l++) {
      f[`cache_key_t.${l}`] = new Tensor('float32', this.keys[l], kShape);
      f[`cache_value.${l}`] = new Tensor('float32', this.values[l], vShape);
    }
    return f;
  }

  /** After a step: writes each live row's new K/V into slot pos and unmasks it. */
  store(out: ort.InferenceSession.OnnxValueMapType): void {
    const { H, hd, capacity } = this;
    for (let l = 0; l < this.c.nLayers; l++) {
      const nk = out[`new_key.${l}`].data as Float32Array;
      const nv = out[`new_value.${l}`].data as Float32Array;
      const keys = this.keys[l];
      const values = this.values[l];
      this.rows.forEach((row, r) => {
        if (row.stop) return;
        for (let h = 0; h < H; h++) {
          const src = (r * H + h) * hd;
          values.set(nv.subarray(src, src + hd), ((r * H + h) * capacity + row.pos) * hd);
          const kBase = (r * H + h) * hd * capacity + row.pos;
          for (let i = 0; i < hd; i++) keys[kBase + i * capacity] = nk[src + i];
        }
      });
    }
    this.rows.forEach((row, r) => {
      if (row.stop) return;
      this.bias[r * capacity + row.pos] = 0;
      row.pos++;
    });
  }
}
