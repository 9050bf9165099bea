// Model configuration (zod schema and presets) and the flat parameter layout every other module shares:
// parameters, AdamW moments and checkpoints are one Float32Array each, sliced by this layout.
import { z } from 'zod';
import { VOCAB_SIZE } from './tokenizer';

export const ModelConfig = z
  .object({
    /** Vocabulary size (the byte-level tokenizer's VOCAB_SIZE). */
    vocabSize: z.number().int().positive().default(VOCAB_SIZE),
    /** Maximum context in tokens (size of the learned position table). */
    contextLength: z.number().int().positive(),
    /** Residual stream width. */
    dModel: z.number().int().positive(),
    nLayers: z.number().int().positive(),
    nHeads: z.number().int().positive(),
    /** LayerNorm epsilon (GPT-2 uses 1e-5). */
    layerNormEps: z.number().positive().default(1e-5),
  })
  .refine((c) => c.dModel % c.nHeads === 0, { message: 'dModel must be divisible by nHeads' });
export type ModelConfig = z.infer<typeof ModelConfig>;

export const PRESETS = {
  /** For tests: fast to build and to check against finite differences. */
  tiny: { vocabSize: VOCAB_SIZE, contextLength: 64, dModel: 32, nLayers: 2, nHeads: 2, layerNormEps: 1e-5 },
  /** ~0.96 M params: the embedded default. */
  'embedded-1m': { vocabSize: VOCAB_SIZE, contextLength: 1024, dModel: 128, nLayers: 4, nHeads: 4, layerNormEps: 1e-5 },
  /** ~2.9 M params. */
  'embedded-3m': { vocabSize: VOCAB_SIZE, contextLength: 1024, dModel: 192, nLayers: 6, nHeads: 6, layerNormEps: 1e-5 },
} as const satisfies Record<string, ModelConfig>;
export type PresetName = keyof typeof PRESETS;

/** Sequence-length buckets: a batch is padded up to the smallest bucket that fits (one ORT session each). */
export const LENGTH_BUCKETS = [128, 256, 512, 1024] as const;

export function modelConfig(nameOrConfig: PresetName | z.input<typeof ModelConfig>): ModelConfig {
  const raw = typeof nameOrConfig === 'string' ? PRESETS[nameOrConfig] : nameOrConfig;
  if (!raw) throw new Error(`unknown model preset ${String(nameOrConfig)}: use one of ${Object.keys(PRESETS).join(', ')}`);
  return ModelConfig.parse(raw);
}

/** Smallest bucket >= length, capped by the context (lengths above every bucket use the context itself). */
export function bucketLength(length: number, contextLength: number): number {
  if (length > contextLength) throw new Error(`sequence of ${length} tokens exceeds the model context ${contextLength}: truncate it first`);
  for (const b of LENGTH_BUCKETS) if (b >= length && b <= contextLength) return b;
  return contextLength;
}

export interface ParamSpec {
  name: string; // HF GPT-2 style name, e.g. "h.0.attn.c_attn.weight"
  shape: number[];
  offset: number;
  size: number;
  /** Decayed by AdamW (matrices and embeddings, as nanoGPT does); biases and LayerNorm are not. */
  decay: boolean;
  init: 'normal' | 'residual' | 'zeros' | 'ones';
}

export interface ParamLayout {
  specs: ParamSpec[];
  byName: Map<string, ParamSpec>;
  total: number;
}

export function paramLayout(c: ModelConfig): ParamLayout {
  const d = c.dModel;
  const specs: ParamSpec[] = [];
  let offset = 0;
  const add = (name: string, shape: number[], init: ParamSpec['init']) => {
    const size = shape.reduce((a, b) => a * b, 1);
    specs.push({ name, shape, offset, size, decay: shape.length === 2, init });
    offset += size;
  };
  add('wte.weight', [c.vocabSize, d], 'normal');
  add('wpe.weight', [c.contextLength, d], 'normal');
  for (let l = 0; l < c.nLayers; l++) {
    add(`h.${l}.ln_1.weight`, [d], 'ones');
    add(`h.${l}.ln_1.bias`, [d], 'zeros');
    add(`h.${l}.attn.c_attn.weight`, [d, 3 * d], 'normal');
    add(`h.${l}.attn.c_attn.bias`, [3 * d], 'zeros');
    add(`h.${l}.attn.c_proj.weight`, [d, d], 'residual');
    add(`h.${l}.attn.c_proj.bias`, [d], 'zeros');
    add(`h.${l}.ln_2.weight`, [d], 'ones');
    add(`h.${l}.ln_2.bias`, [d], 'zeros');
    add(`h.${l}.mlp.c_fc.weight`, [d, 4 * d], 'normal');
    add(`h.${l}.mlp.c_fc.bias`, [4 * d], 'zeros');
    add(`h.${l}.mlp.c_proj.weight`, [4 * d, d], 'residual');
    add(`h.${l}.mlp.c_proj.bias`, [d], 'zeros');
  }
  add('ln_f.weight', [d], 'ones');
  add('ln_f.bias', [d], 'zeros');
  return { specs, byName: new Map(specs.map((s) => [s.name, s])), total: offset };
}

export function countParams(c: ModelConfig): number {
  return paramLayout(c).total;
}

/** Forward FLOPs per token: 2 x (block matmuls + tied LM head) + attention scores and mixing over the full T x T. */
export function forwardFlopsPerToken(c: ModelConfig, seqLen: number): number {
  const d = c.dModel;
  return 2 * (12 * c.nLayers * d * d + d * c.vocabSize) + 4 * c.nLayers * seqLen * d;
}
