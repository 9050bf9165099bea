// Deterministic seeded parameter initialisation (GPT-2 recipe: N(0, 0.02), residual projections scaled by
// 1/sqrt(2 * nLayers), zero biases, unit LayerNorm gains): the weights of step 0.
import { Xoshiro128 } from '../../common/xoshiro';
import { ModelConfig, paramLayout } from '../config';

export function initParams(config: ModelConfig, seed: number): Float32Array {
  const layout = paramLayout(config);
  const params = new Float32Array(layout.total);
  const rng = new Xoshiro128(seed);
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
