// Export of a checkpoint as a directory @huggingface/transformers loads locally (env.allowRemoteModels =
// false): config.json (model_type gpt2), tokenizer.json + tokenizer_config.json, onnx/model.onnx.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../../store/artifact-store';
import type { Checkpoint } from './checkpoint';
import { buildHfDecoderGraph } from '../graph/decoder-graph';
import { SPECIAL_TOKENS, SPECIAL_TOKEN_TEXT, tokenizerJson } from '../tokenizer';

export function hfConfigJson(ck: Pick<Checkpoint, 'config'>): Record<string, unknown> {
  const c = ck.config;
  return {
    model_type: 'gpt2',
    architectures: ['GPT2LMHeadModel'],
    vocab_size: c.vocabSize,
    n_positions: c.contextLength,
    n_ctx: c.contextLength,
    n_embd: c.dModel,
    n_layer: c.nLayers,
    n_head: c.nHeads,
    activation_function: 'gelu_new',
    layer_norm_epsilon: c.layerNormEps,
    bos_token_id: SPECIAL_TOKENS.EOT,
    eos_token_id: [SPECIAL_TOKENS.EOT, SPECIAL_TOKENS.END],
    pad_token_id: SPECIAL_TOKENS.PAD,
    tie_word_embeddings: true,
    use_cache: true,
  };
}

export function tokenizerConfigJson(): Record<string, unknown> {
  return {
    tokenizer_class: 'PreTrainedTokenizerFast',
    model_max_length: 1e30,
    bos_token: SPECIAL_TOKEN_TEXT[SPECIAL_TOKENS.EOT],
    eos_token: SPECIAL_TOKEN_TEXT[SPECIAL_TOKENS.END],
    pad_token: SPECIAL_TOKEN_TEXT[SPECIAL_TOKENS.PAD],
    unk_token: null,
    add_bos_token: false,
    add_eos_token: false,
    clean_up_tokenization_spaces: false,
  };
}

/** Writes the directory (each file atomically); returns the paths written. */
export async function exportForTransformersJs(ck: Checkpoint, dir: string): Promise<string[]> {
  await fs.mkdir(path.join(dir, 'onnx'), { recursive: true });
  const files: [string, Uint8Array | string][] = [
    ['config.json', JSON.stringify(hfConfigJson(ck), null, 2)],
    ['generation_config.json', JSON.stringify({ bos_token_id: SPECIAL_TOKENS.EOT, eos_token_id: [SPECIAL_TOKENS.EOT, SPECIAL_TOKENS.END], pad_token_id: SPECIAL_TOKENS.PAD }, null, 2)],
    ['tokenizer.json', JSON.stringify(tokenizerJson())],
    ['tokenizer_config.json', JSON.stringify(tokenizerConfigJson(), null, 2)],
    ['onnx/model.onnx', buildHfDecoderGraph(ck.config, ck.params)],
  ];
  return writeFolderFiles(dir, files);
}

/** Writes each (relative name, bytes) into dir atomically, in order; returns the written paths. */
export async function writeFolderFiles(dir: string, files: [string, string | Uint8Array][]): Promise<string[]> {
  const written: string[] = [];
  for (const [name, data] of files) {
    const p = path.join(dir, name);
    await writeFileAtomic(p, data);
    written.push(p);
  }
  return written;
}
