// Sampling seeds: every model call's seed is a pure function of (run seed, step, prompt id, sample
// index, turn), so a rollout batch replays exactly whatever else ran in the same batch.

export interface SeedCoordinates {
  runSeed: number;
  step: number;
  promptId: string;
  sampleIndex: number;
  turn: number;
}

/** 32-bit FNV-1a over a canonical string, then a murmur3 finaliser to spread nearby inputs. */
export function deriveSeed(c: SeedCoordinates): number {
  const key = `${c.runSeed}\u0000${c.step}\u0000${c.promptId}\u0000${c.sampleIndex}\u0000${c.turn}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  // Non-negative and below 2^31: safe as an int32 seed for any backend.
  return h >>> 1;
}
