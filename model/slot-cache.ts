// The sampler's fixed-slot KV cache: per layer K and V of [rows, heads, capacity, head_dim] in JS memory.
// Row r's position p lives in slot p; a bias row masks slots it has not written. Capacity doubles on demand;
// finished rows are compacted away once they are half the batch, so late steps run on live rows only.
import type * as ort from 'onnxruntime-node';
import { Tensor } from 'onnxruntime-node';
import type { GenerateRequest, StopReason } from './backend';
import { ModelConfig } from './config';
import { Rng } from './init';
import { SPECIAL_TOKENS } from './tokenizer';

const MASK_NEG = -1e9;
const SLOT_ROUND = 64;

export interface DecodeRow {
  index: number;
  req: GenerateRequest;
  rng: Rng;
  tokens: number[];
  logprobs: number[];
  /** Position of the next token to feed (its K/V goes to slot pos). */
  pos: number;
  stop: StopReason | undefined;
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
    const fresh = () => new Float32Array(n * H * capacity * hd);
    const copy = (src: Float32Array) => {
      const dst = fresh();
      const stride = Math.min(this.capacity, capacity) * hd;
      keep.forEach((old, r) => {
        for (let h = 0; h < H; h++) dst.set(src.subarray((old * H + h) * this.capacity * hd, (old * H + h) * this.capacity * hd + stride), (r * H + h) * capacity * hd);
      });
      return dst;
    };
    if (this.capacity === 0) {
      this.keys = Array.from({ length: this.c.nLayers }, fresh);
      this.values = Array.from({ length: this.c.nLayers }, fresh);
    } else {
      this.keys = this.keys.map(copy);
      this.values = this.values.map(copy);
    }
    this.rows = keep.map((i) => this.rows[i]);
    this.capacity = capacity;
    this.bias = new Float32Array(n * capacity).fill(MASK_NEG);
    this.rows.forEach((row, r) => {
      if (!row.stop) this.bias.fill(0, r * capacity, r * capacity + row.pos);
    });
  }

  /** Copies a prefilled prompt's K/V ([H, T, hd] per layer) into slots 0..T-1 of one row. */
  fillPrompt(slot: number, T: number, keys: Float32Array[], values: Float32Array[]): void {
    const { H, hd, capacity } = this;
    for (let l = 0; l < keys.length; l++) {
      for (let h = 0; h < H; h++) {
        this.keys[l].set(keys[l].subarray(h * T * hd, (h + 1) * T * hd), (slot * H + h) * capacity * hd);
        this.values[l].set(values[l].subarray(h * T * hd, (h + 1) * T * hd), (slot * H + h) * capacity * hd);
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
      const capacity = grow ? Math.min(this.maxContext, Math.max(need, this.capacity * 2)) : this.capacity;
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
    const shape = [n, this.H, this.capacity, this.hd];
    const f: Record<string, ort.Tensor> = {
      tokens: new Tensor('int32', tokens, [n]),
      positions: new Tensor('int32', positions, [n]),
      cache_bias: new Tensor('float32', this.bias, [n, this.capacity]),
    };
    for (let l = 0; l < this.c.nLayers; l++) {
      f[`cache_key.${l}`] = new Tensor('float32', this.keys[l], shape);
      f[`cache_value.${l}`] = new Tensor('float32', this.values[l], shape);
    }
    return f;
  }

  /** After a step: writes each live row's new K/V into slot pos and unmasks it. */
  store(out: ort.InferenceSession.OnnxValueMapType): void {
    const { H, hd, capacity } = this;
    for (let l = 0; l < this.c.nLayers; l++) {
      const nk = out[`new_key.${l}`].data as Float32Array;
      const nv = out[`new_value.${l}`].data as Float32Array;
      this.rows.forEach((row, r) => {
        if (row.stop) return;
        for (let h = 0; h < H; h++) {
          const dst = ((r * H + h) * capacity + row.pos) * hd;
          const src = (r * H + h) * hd;
          this.keys[l].set(nk.subarray(src, src + hd), dst);
          this.values[l].set(nv.subarray(src, src + hd), dst);
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
