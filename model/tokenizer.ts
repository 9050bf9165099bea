// Byte-level tokenizer: ids 0..255 are UTF-8 bytes, then a few special tokens for turn structure.
// The chat template renders messages into one token sequence; a model call's prompt ends with the
// assistant header, and generation stops at END (end of turn) or EOT (end of text).

export const SPECIAL_TOKENS = {
  EOT: 256, // <|endoftext|>
  SYSTEM: 257, // <|system|>
  USER: 258, // <|user|>
  ASSISTANT: 259, // <|assistant|>
  TOOL: 260, // <|tool|>  (tool / environment output)
  END: 261, // <|end|>   (end of one message)
  PAD: 262, // <|pad|>
} as const;

export const SPECIAL_TOKEN_TEXT: Record<number, string> = {
  256: '<|endoftext|>',
  257: '<|system|>',
  258: '<|user|>',
  259: '<|assistant|>',
  260: '<|tool|>',
  261: '<|end|>',
  262: '<|pad|>',
};

/** Vocabulary size: 256 bytes + 7 specials, padded to a multiple of 8 for friendlier matmuls. */
export const VOCAB_SIZE = 264;

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';
export interface ChatMessage {
  role: ChatRole;
  content: string;
}

const ROLE_TOKEN: Record<ChatRole, number> = {
  system: SPECIAL_TOKENS.SYSTEM,
  user: SPECIAL_TOKENS.USER,
  assistant: SPECIAL_TOKENS.ASSISTANT,
  tool: SPECIAL_TOKENS.TOOL,
};

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

export function encodeText(text: string): number[] {
  return Array.from(encoder.encode(text));
}

/** Decodes ids to text; special tokens render as their names, invalid UTF-8 as U+FFFD. */
export function decodeTokens(ids: readonly number[]): string {
  let out = '';
  let bytes: number[] = [];
  const flush = () => {
    if (bytes.length) out += decoder.decode(Uint8Array.from(bytes));
    bytes = [];
  };
  for (const id of ids) {
    if (id >= 0 && id < 256) bytes.push(id);
    else {
      flush();
      out += SPECIAL_TOKEN_TEXT[id] ?? '';
    }
  }
  flush();
  return out;
}

/**
 * Renders a conversation for a model call: every message as <role> content <end>, then the assistant
 * header so the model continues with its own turn. No BOS: EOT separates documents in pretraining.
 */
export function renderChatPrompt(messages: readonly ChatMessage[]): number[] {
  const ids: number[] = [];
  for (const m of messages) {
    ids.push(ROLE_TOKEN[m.role]);
    // A loop, not a spread: spreading a long message (~120k+ bytes) overflows the call stack.
    for (const b of encodeText(m.content)) ids.push(b);
    ids.push(SPECIAL_TOKENS.END);
  }
  ids.push(SPECIAL_TOKENS.ASSISTANT);
  return ids;
}

/** HF `tokenizer.json` for a byte-level vocabulary whose ids equal byte values (standard tooling reads it). */
export function tokenizerJson(): Record<string, unknown> {
  const vocab: Record<string, number> = {};
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = b;
  for (const [id, text] of Object.entries(SPECIAL_TOKEN_TEXT)) vocab[text] = Number(id);
  for (let id = 263; id < VOCAB_SIZE; id++) vocab[`<|unused${id - 263}|>`] = id;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: Object.entries(SPECIAL_TOKEN_TEXT).map(([id, content]) => ({
      id: Number(id), content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    })),
    normalizer: null,
    pre_tokenizer: { type: 'Split', pattern: { Regex: '' }, behavior: 'Isolated', invert: false },
    post_processor: null,
    decoder: { type: 'ByteFallback' },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: true, ignore_merges: false, vocab, merges: [] },
  };
}
