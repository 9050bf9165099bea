// The inverse of the project's chat template (model/tokenizer.ts renderChatPrompt): a prompt's token ids back
// to messages. Exact, because message content is bytes (0..255) and turns are marked by special tokens, so
// chat-style backends and the external-trainer dataset can carry messages instead of ids.
import { SPECIAL_TOKENS, decodeTokens, type ChatMessage, type ChatRole } from '../model';

const ROLE_OF: Record<number, ChatRole> = {
  [SPECIAL_TOKENS.SYSTEM]: 'system',
  [SPECIAL_TOKENS.USER]: 'user',
  [SPECIAL_TOKENS.ASSISTANT]: 'assistant',
  [SPECIAL_TOKENS.TOOL]: 'tool',
};

/** Messages of a rendered model-call prompt (which ends with the assistant header); throws on foreign ids. */
export function parseChatPrompt(ids: readonly number[]): ChatMessage[] {
  if (ids.length === 0 || ids[ids.length - 1] !== SPECIAL_TOKENS.ASSISTANT) throw new Error('not a rendered chat prompt: it must end with the <|assistant|> header');
  const messages: ChatMessage[] = [];
  let i = 0;
  const end = ids.length - 1;
  while (i < end) {
    const role = ROLE_OF[ids[i]];
    if (!role) throw new Error(`not a rendered chat prompt: token ${ids[i]} at ${i} is not a role header`);
    let j = i + 1;
    while (j < end && ids[j] !== SPECIAL_TOKENS.END) {
      if (ids[j] >= 256) throw new Error(`not a rendered chat prompt: special token ${ids[j]} inside a message at ${j}`);
      j++;
    }
    if (j >= end) throw new Error('not a rendered chat prompt: a message has no <|end|>');
    messages.push({ role, content: decodeTokens(ids.slice(i + 1, j)) });
    i = j + 1;
  }
  return messages;
}
