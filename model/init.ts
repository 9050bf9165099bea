// Deterministic seeded initialisation (GPT-2 recipe: N(0, 0.02), residual projections scaled by
// 1/sqrt(2 * nLayers), zero biases, unit LayerNorm gains) and the seeded RNG the sampler reuses.
import { ModelConfig, paramLayout } from './config';

/** xoshiro128** seeded through splitmix32: fast, 32-bit, identical on every platform. */
export class Rng {
  private s = new Uint32Array(4);
  constructor(seed: number) {
    let x = seed >>> 0;
    for (let i = 0; i < 4; i++) {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      this.s[i] = (z ^ (z >>> 16)) >>> 0;
    }
  }

  nextU32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform in [0, 1) with 53 random bits. */
  next(): number {
    return ((this.nextU32() >>> 5) * 67108864 + (this.nextU32() >>> 6)) / 9007199254740992;
  }

  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

export function initParams(config: ModelConfig, seed: number): Float32Array {
  const layout = paramLayout(config);
  const params = new Float32Array(layout.total);
  const rng = new Rng(seed);
  const residualStd = 0.02 / Math.sqrt(2 * config.nLayers);
  for (const s of layout.specs) {
    const view = params.subarray(s.offset, s.offset + s.size);
    if (s.init === 'ones') view.fill(1);
    else if (s.init === 'normal' || s.init === 'residual') {
      const std = s.init === 'normal' ? 0.02 : residualStd;
      for (let i = 0; i < view.length; i++) view[i] = std * rng.normal();
    }
  }
  return params;
}
