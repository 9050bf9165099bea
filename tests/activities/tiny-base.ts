// The small real model the activity tests start from: seeded, deterministic, with room for a math episode's
// prompt (the 'tiny' preset's 64-token context has none).
import { encodeCheckpoint, modelConfig, Trainer, VOCAB_SIZE } from '../../model';

/** Checkpoint bytes of a freshly initialised 1-layer model (seed 7); the same bytes on every call. */
export async function tinyBaseCheckpoint(): Promise<Uint8Array> {
  const config = modelConfig({ vocabSize: VOCAB_SIZE, contextLength: 512, dModel: 32, nLayers: 1, nHeads: 2, layerNormEps: 1e-5 });
  const trainer = Trainer.fromSeed(config, 7, { deterministic: true });
  try {
    return encodeCheckpoint(await trainer.state());
  } finally {
    await trainer.close();
  }
}
