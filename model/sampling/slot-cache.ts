// The sampler's fixed-slot KV cache in JS memory: per layer K and V as [rows, heads, capacity, head_dim]
// (every copy in or out is a contiguous run of floats).
// Row r's position p lives in slot p; a bias row masks slots it has not written. Capacity grows by 16 slots;
// finished rows are compacted away once they are half the batch, so late steps run on live rows only.
// Growth and compaction move the data in place inside buffers kept across waves and calls (SlotArena).
import type * as ort from 'onnxruntime-node';
import { Tensor } from 'onnxruntime-node';
import type { GenerateRequest, StopReason } from '../backend';
import { ModelConfig } from '../config';
import { Xoshiro128 } from '../../common/xoshiro';
import { SPECIAL_TOKENS } from '../tokenizer';
import type { Prefill } from './types';

const MASK_NEG = -1e9;
/**
 * Attention reads every slot of the capacity each step, so a small rounding unit wastes little; growth
 * moves the cache in place. Capacities stay multiples of 16 (ORT's softmax then sums the unmasked slots in
 * the same order at any capacity: results are bit-identical to those of 64-slot rounding).
 */
const SLOT_ROUND = 16;

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

/** Backing memory of the cache, one buffer per layer for K and for V, reused by every wave of a sampler. */
export class SlotArena {
  keys: Float32Array[] = [];
  values: Float32Array[] = [];

  constructor(private readonly layers: number) {}

  /** Makes every buffer hold at least `floats` values, keeping the first `keep` (grows by half again at least). */
  reserve(floats: number, keep: number): void {
    if ((this.keys[0]?.length ?? 0) >= floats) return;
    const size = Math.max(floats, Math.ceil(1.5 * (this.keys[0]?.length ?? 0)));
    const grow = (old: Float32Array | undefined) => {
      const next = new Float32Array(size);
      if (old && keep > 0) next.set(old.subarray(0, keep));
      return next;
    };
    this.keys = Array.from({ length: this.layers }, (_, l) => grow(this.keys[l]));
    this.values = Array.from({ length: this.layers }, (_, l) => grow(this.values[l]));
  }
}

export class SlotCache {
  rows: DecodeRow[];
  private bias = new Float32Array(0);
  private capacity = 0;
  private readonly H: number;
  private readonly hd: number;

  constructor(
    private readonly c: ModelConfig,
    rows: DecodeRow[],
    private readonly maxContext: number,
    private readonly arena: SlotArena,
  ) {
    this.rows = rows;
    this.H = c.nHeads;
    this.hd = c.dModel / c.nHeads;
    const longest = Math.max(1, ...rows.map((r) => r.pos + 1));
    this.capacity = Math.min(maxContext, Math.ceil(longest / SLOT_ROUND) * SLOT_ROUND);
    const floats = rows.length * this.H * this.hd * this.capacity;
    arena.reserve(floats, 0);
    // Slots a row has not written are masked, but their values must be finite (0 x NaN is NaN): zero them.
    for (let l = 0; l < c.nLayers; l++) {
      arena.keys[l].fill(0, 0, floats);
      arena.values[l].fill(0, 0, floats);
    }
    this.resetBias();
  }

  private resetBias(): void {
    const C = this.capacity;
    this.bias = new Float32Array(this.rows.length * C).fill(MASK_NEG);
    this.rows.forEach((row, r) => {
      if (!row.stop) this.bias.fill(0, r * C, r * C + row.pos);
    });
  }

  /** Keeps rows `keep` (ascending), moving each kept row's blocks down over the dropped ones. */
  private compact(keep: number[]): void {
    const rowFloats = this.H * this.hd * this.capacity;
    for (let l = 0; l < this.c.nLayers; l++) {
      for (const buf of [this.arena.keys[l], this.arena.values[l]]) {
        keep.forEach((old, r) => {
          if (old !== r) buf.copyWithin(r * rowFloats, old * rowFloats, (old + 1) * rowFloats);
        });
      }
    }
    this.rows = keep.map((i) => this.rows[i]);
  }

  /** Widens every row's slot range to `capacity`, in place: blocks move up, last first; the new slots are zeroed. */
  private grow(capacity: number): void {
    const { H, hd } = this;
    const n = this.rows.length;
    const old = this.capacity;
    this.arena.reserve(n * H * hd * capacity, n * H * hd * old);
    // n*H blocks of old*hd floats (one per row and head); blocks overlap their destinations, so the last moves first.
    const widen = (buf: Float32Array, runs: number, from: number, to: number) => {
      for (let g = runs - 1; g >= 0; g--) {
        buf.copyWithin(g * to, g * from, g * from + from);
        buf.fill(0, g * to + from, (g + 1) * to);
      }
    };
    for (let l = 0; l < this.c.nLayers; l++) {
      widen(this.arena.keys[l], n * H, old * hd, capacity * hd);
      widen(this.arena.values[l], n * H, old * hd, capacity * hd);
    }
    this.capacity = capacity;
  }

  /** Copies a prefilled prompt's K/V (row `pre.row` of a [rows, H, width, hd] batch) into slots 0..T-1. */
  fillPrompt(slot: number, T: number, pre: Prefill): void {
    const { H, hd, capacity } = this;
    for (let l = 0; l < pre.keys.length; l++) {
      for (let h = 0; h < H; h++) {
        const src = (pre.row * H + h) * pre.width * hd;
        const dst = (slot * H + h) * capacity * hd;
        this.arena.keys[l].set(pre.keys[l].subarray(src, src + T * hd), dst);
        this.arena.values[l].set(pre.values[l].subarray(src, src + T * hd), dst);
      }
    }
    this.bias.fill(0, slot * capacity, slot * capacity + T);
  }

  /** Before a step: drop finished rows once they are half the batch; grow capacity if a row needs it. */
  prepare(): void {
    let live = 0;
    let need = 0;
    for (const row of this.rows) {
      if (row.stop) continue;
      live++;
      need = Math.max(need, row.pos + 1);
    }
    const grow = need > this.capacity;
    const compact = live <= this.rows.length / 2 && this.rows.length > 1;
    if (compact) this.compact(this.rows.flatMap((r, i) => (r.stop ? [] : [i])));
    if (grow) this.grow(Math.min(this.maxContext, Math.ceil(need / SLOT_ROUND) * SLOT_ROUND));
    if (grow || compact) this.resetBias();
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
    const floats = n * this.H * this.hd * this.capacity;
    const shape = [n, this.H, this.capacity, this.hd];
    const f: Record<string, ort.Tensor> = {
      tokens: new Tensor('int32', tokens, [n]),
      positions: new Tensor('int32', positions, [n]),
      cache_bias: new Tensor('float32', this.bias, [n, this.capacity]),
    };
    for (let l = 0; l < this.c.nLayers; l++) {
      f[`cache_key.${l}`] = new Tensor('float32', this.arena.keys[l].subarray(0, floats), shape);
      f[`cache_value.${l}`] = new Tensor('float32', this.arena.values[l].subarray(0, floats), shape);
    }
    return f;
  }

  /** After a step: writes each live row's new K/V into slot pos and unmasks it. */
  store(out: ort.InferenceSession.OnnxValueMapType): void {
    const { H, hd, capacity } = this;
    // new_kv holds, per layer, the new K then the new V, [rows, H, 1, hd] each.
    const kv = out.new_kv.data as Float32Array;
    const block = this.rows.length * H * hd;
    for (let l = 0; l < this.c.nLayers; l++) {
      const nk = kv.subarray(2 * l * block, (2 * l + 1) * block);
      const nv = kv.subarray((2 * l + 1) * block, (2 * l + 2) * block);
      const keys = this.arena.keys[l];
      const values = this.arena.values[l];
      for (let r = 0; r < this.rows.length; r++) {
        const row = this.rows[r];
        if (row.stop) continue;
        for (let h = 0; h < H; h++) {
          // hd floats each: plain loops, no subarray views to allocate.
          const src = (r * H + h) * hd;
          const dst = ((r * H + h) * capacity + row.pos) * hd;
          for (let i = 0; i < hd; i++) {
            keys[dst + i] = nk[src + i];
            values[dst + i] = nv[src + i];
          }
        }
      }
    }
    this.rows.forEach((row, r) => {
      if (row.stop) return;
      this.bias[r * capacity + row.pos] = 0;
      row.pos++;
    });
  }
}
