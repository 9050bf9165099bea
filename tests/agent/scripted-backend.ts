// A ModelBackend test double: answers each request with text from a script keyed on the prompt, records
// every batch, and throws on a prompt the script does not know (fails loudly, never guesses).

import type { GenerateRequest, GenerateResult, ModelBackend } from '../../model/backend';
import { SPECIAL_TOKENS, decodeTokens, encodeText } from '../../model/tokenizer';

/** Returns the model's text for a prompt, or undefined when the test did not expect this prompt. */
export type Script = (prompt: string, request: GenerateRequest) => string | undefined;

export class ScriptedBackend implements ModelBackend {
  readonly batches: GenerateRequest[][] = [];
  closed = false;

  constructor(
    private readonly script: Script,
    readonly maxContext = 1024,
  ) {}

  async generate(requests: GenerateRequest[]): Promise<GenerateResult[]> {
    if (this.closed) throw new Error('ScriptedBackend.generate called after close');
    this.batches.push(requests);
    return requests.map((r) => {
      const prompt = decodeTokens(r.promptTokens);
      const text = this.script(prompt, r);
      if (text === undefined) throw new Error(`ScriptedBackend: unexpected prompt:\n${prompt}`);
      let tokens = [...encodeText(text), SPECIAL_TOKENS.END];
      let stopReason: GenerateResult['stopReason'] = 'stop-token';
      if (tokens.length > r.maxNewTokens) {
        tokens = tokens.slice(0, r.maxNewTokens);
        stopReason = 'max-new-tokens';
      }
      return { tokens, text: decodeTokens(tokens), logprobs: tokens.map((_, i) => -0.5 - i / 1000), stopReason };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** The text after the last occurrence of `marker` in the prompt (what the latest message said). */
export function lastMessage(prompt: string): string {
  const i = Math.max(prompt.lastIndexOf('<|user|>'), prompt.lastIndexOf('<|tool|>'));
  return prompt.slice(i).replace(/^<\|(user|tool)\|>/, '').replace(/<\|end\|><\|assistant\|>$/, '');
}
