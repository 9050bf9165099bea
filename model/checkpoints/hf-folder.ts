// A checkpoint as a Hugging Face model folder that transformers (Python), vLLM and TRL load: model.safetensors
// with GPT-2 names, config.json (GPT2LMHeadModel), the byte-level tokenizer.json, a chat template equal to
// renderChatPrompt, and a generation config that samples. Also the way back (import) to a WHALE checkpoint.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../../store/artifact-store';
import type { Checkpoint } from './checkpoint';
import { ModelConfig, paramLayout } from '../config';
import { hfConfigJson, tokenizerConfigJson, writeFolderFiles } from './transformers-js-export';
import { decodeSafetensors, encodeSafetensors, type Tensor } from './safetensors';
import { SPECIAL_TOKENS, SPECIAL_TOKEN_TEXT, VOCAB_SIZE, tokenizerJson } from '../tokenizer';
import { WhaleError } from '../../common/errors';

/** renderChatPrompt as a Jinja chat template: `<|role|>content<|end|>` per message, then `<|assistant|>`. */
export const CHAT_TEMPLATE =
  "{%- for message in messages %}{%- set role = 'system' if message['role'] == 'developer' else message['role'] %}" +
  "{{- '<|' + role + '|>' + message['content'] + '<|end|>' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|assistant|>' }}{%- endif %}";

const PREFIX = 'transformer.';

/** A folder given to `whale import` is not a model WHALE can load: the message names the file and the fix. */
export class HfFolderError extends WhaleError {
  override name = 'HfFolderError';
  readonly fault = 'user-input';
}

export function hfTransformersConfigJson(ck: Pick<Checkpoint, 'config'>): Record<string, unknown> {
  // No dropout: the project's model has none, and a trainer loading this folder must compute the same function.
  return { ...hfConfigJson(ck), n_inner: null, resid_pdrop: 0, embd_pdrop: 0, attn_pdrop: 0, scale_attn_weights: true, dtype: 'float32' };
}

/** Writes the folder (each file atomically); returns the paths written. */
export async function exportHfFolder(ck: Checkpoint, dir: string): Promise<string[]> {
  const tensors: Record<string, Tensor> = {};
  for (const s of paramLayout(ck.config).specs) tensors[PREFIX + s.name] = { shape: s.shape, data: ck.params.subarray(s.offset, s.offset + s.size) };
  await fs.mkdir(dir, { recursive: true });
  const files: [string, Uint8Array | string][] = [
    ['model.safetensors', encodeSafetensors(tensors)],
    ['config.json', JSON.stringify(hfTransformersConfigJson(ck), null, 2)],
    // Sampling on by default: servers such as `transformers serve` only sample when the checkpoint says so.
    ['generation_config.json', JSON.stringify({ bos_token_id: SPECIAL_TOKENS.EOT, eos_token_id: [SPECIAL_TOKENS.EOT, SPECIAL_TOKENS.END], pad_token_id: SPECIAL_TOKENS.PAD, do_sample: true, temperature: 1.0, top_k: 0, top_p: 1.0 }, null, 2)],
    ['tokenizer.json', JSON.stringify(tokenizerJson())],
    ['tokenizer_config.json', JSON.stringify({ ...tokenizerConfigJson(), chat_template: CHAT_TEMPLATE }, null, 2)],
    ['chat_template.jinja', CHAT_TEMPLATE],
  ];
  return writeFolderFiles(dir, files);
}

async function readJson(file: string, what: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch {
    throw new HfFolderError(`${what}: ${file} is missing; give a Hugging Face model folder (config.json, model.safetensors)`);
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new HfFolderError(`${what}: ${file} is not valid JSON`);
  }
}

/**
 * Reads a GPT-2 folder with the project's byte vocabulary (as exportHfFolder writes, or as a trainer saved it)
 * back into a checkpoint with fresh AdamW moments (step 0). Other architectures are refused by name.
 */
export async function importHfFolder(dir: string): Promise<Checkpoint> {
  const what = `Hugging Face folder ${dir}`;
  const cfg = await readJson(path.join(dir, 'config.json'), what);
  const refuse = (why: string): never => {
    throw new HfFolderError(`${what} cannot become a WHALE checkpoint: ${why}. Only GPT-2 models with the project's byte vocabulary (as \`whale export --format hf\` writes them) import; serve other models through the OpenAI backend instead.`);
  };
  if (cfg.model_type !== 'gpt2') refuse(`model_type is ${JSON.stringify(cfg.model_type)}, not "gpt2"`);
  if (cfg.vocab_size !== VOCAB_SIZE) refuse(`vocab_size is ${String(cfg.vocab_size)}, the project's is ${VOCAB_SIZE}`);
  const act = cfg.activation_function ?? 'gelu_new';
  if (act !== 'gelu_new' && act !== 'gelu_pytorch_tanh') refuse(`activation_function is ${String(act)}; the project's model uses gelu_new`);
  const d = cfg.n_embd as number;
  if (cfg.n_inner != null && cfg.n_inner !== 4 * d) refuse(`n_inner is ${String(cfg.n_inner)}; the project's MLP is 4 x n_embd`);
  if (cfg.tie_word_embeddings === false) refuse('tie_word_embeddings is false; the project ties the LM head to the embeddings');
  const parsed = ModelConfig.safeParse({ vocabSize: cfg.vocab_size, contextLength: cfg.n_positions, dModel: d, nLayers: cfg.n_layer, nHeads: cfg.n_head, layerNormEps: cfg.layer_norm_epsilon ?? 1e-5 });
  if (!parsed.success) refuse(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  const config = parsed.data as ModelConfig;
  const tokenizer = await readJson(path.join(dir, 'tokenizer.json'), what).catch(() => null);
  const vocab = ((tokenizer?.model as { vocab?: Record<string, number> } | undefined)?.vocab) ?? {};
  for (const [id, text] of Object.entries(SPECIAL_TOKEN_TEXT)) if (tokenizer && vocab[text] !== Number(id)) refuse(`its tokenizer.json does not map ${text} to ${id}`);
  const file = path.join(dir, 'model.safetensors');
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(file);
  } catch {
    const sharded = await fs.stat(path.join(dir, 'model.safetensors.index.json')).then(() => true, () => false);
    return refuse(sharded ? 'its weights are sharded (model.safetensors.index.json); a model this size fits one file' : 'model.safetensors is missing');
  }
  const tensors = decodeSafetensors(bytes, file);
  const layout = paramLayout(config);
  const params = new Float32Array(layout.total);
  for (const s of layout.specs) {
    const t = tensors[PREFIX + s.name] ?? tensors[s.name];
    if (!t) refuse(`tensor ${s.name} is missing`);
    if (t.shape.join('x') !== s.shape.join('x')) refuse(`tensor ${s.name} has shape ${t.shape.join('x')}, expected ${s.shape.join('x')}`);
    params.set(t.data, s.offset);
  }
  const head = tensors['lm_head.weight'];
  if (head && head.data.some((x, i) => x !== params[i])) refuse('lm_head.weight differs from the token embeddings (untied head)');
  return { config, params, adamM: new Float32Array(layout.total), adamV: new Float32Array(layout.total), step: 0 };
}
