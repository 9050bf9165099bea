// Per-token sampling: temperature, top-k, top-p over one row of logits, with the request's own seeded RNG;
// also the base model's log-probability of the chosen token (log-softmax of the raw logits).
import { Xoshiro128 } from '../../common/xoshiro';

export interface SamplingParams {
  temperature: number; // <= 0 means greedy
  topK: number; // 0 = off
  topP: number; // >= 1 = off
}

export interface Sampled {
  token: number;
  logprob: number;
}

function logSumExp(logits: ArrayLike<number>, offset: number, n: number): number {
  let max = -Infinity;
  for (let i = 0; i < n; i++) max = Math.max(max, logits[offset + i]);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(logits[offset + i] - max);
  return max + Math.log(sum);
}

/** Samples from logits[offset .. offset + n). Scratch arrays are reused by the caller across rows. */
export function sampleToken(logits: Float32Array, offset: number, n: number, p: SamplingParams, rng: Xoshiro128, scratch: { ids: Int32Array; probs: Float64Array }): Sampled {
  const lse = logSumExp(logits, offset, n);
  if (!(p.temperature > 0)) {
    let best = 0;
    for (let i = 1; i < n; i++) if (logits[offset + i] > logits[offset + best]) best = i;
    return { token: best, logprob: logits[offset + best] - lse };
  }
  // Candidate set: all ids, or the top-k by logit (partial selection keeps this O(n k)).
  const ids = scratch.ids;
  let m = 0;
  if (p.topK > 0 && p.topK < n) {
    for (let i = 0; i < n; i++) {
      const v = logits[offset + i];
      if (m === p.topK && v <= logits[offset + ids[m - 1]]) continue;
      let j = m < p.topK ? m++ : m - 1;
      while (j > 0 && logits[offset + ids[j - 1]] < v) {
        ids[j] = ids[j - 1];
        j--;
      }
      ids[j] = i;
    }
  } else {
    for (let i = 0; i < n; i++) ids[i] = i;
    m = n;
    if (p.topP < 1) ids.subarray(0, m).sort((a, b) => logits[offset + b] - logits[offset + a]);
  }
  const probs = scratch.probs;
  let max = -Infinity;
  for (let j = 0; j < m; j++) max = Math.max(max, logits[offset + ids[j]] / p.temperature);
  let total = 0;
  for (let j = 0; j < m; j++) {
    probs[j] = Math.exp(logits[offset + ids[j]] / p.temperature - max);
    total += probs[j];
  }
  if (p.topP < 1) {
    // ids are sorted by logit here: keep the smallest prefix whose mass reaches topP.
    let cum = 0;
    let keep = 0;
    while (keep < m) {
      cum += probs[keep++] / total;
      if (cum >= p.topP) break;
    }
    m = keep;
    total = 0;
    for (let j = 0; j < m; j++) total += probs[j];
  }
  let u = rng.next() * total;
  let pick = ids[m - 1];
  for (let j = 0; j < m; j++) {
    u -= probs[j];
    if (u < 0) {
      pick = ids[j];
      break;
    }
  }
  return { token: pick, logprob: logits[offset + pick] - lse };
}
