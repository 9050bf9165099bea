// A test-only model backend that plays a scripted "oracle" policy per domain: it reads the prompt the
// harness built and answers from what is visible there (plus the task's reference, to decide, e.g.,
// whether the answer is already on screen). Used to check that h0 and the reference harnesses drive the
// real agent loop end to end, fit the 1,024-token episode budget, and differ in what they show.
import type { GenerateRequest, GenerateResult, ModelBackend } from '../../model/backend';
import { SPECIAL_TOKENS, decodeTokens, encodeText } from '../../model/tokenizer';

export type Policy = (prompt: string) => string;

export class OracleBackend implements ModelBackend {
  readonly maxContext = 1024;
  constructor(private readonly policy: Policy) {}

  generate(requests: GenerateRequest[]): Promise<GenerateResult[]> {
    return Promise.resolve(
      requests.map((r) => {
        const text = this.policy(decodeTokens(r.promptTokens));
        let tokens = [...encodeText(text), SPECIAL_TOKENS.END];
        let stopReason: GenerateResult['stopReason'] = 'stop-token';
        if (tokens.length > r.maxNewTokens) {
          tokens = tokens.slice(0, r.maxNewTokens);
          stopReason = 'max-new-tokens';
        }
        return { tokens, text: decodeTokens(tokens), logprobs: tokens.map(() => -1), stopReason };
      }),
    );
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Contents of the tool messages in a rendered prompt. */
export function toolMessages(prompt: string): string[] {
  return [...prompt.matchAll(/<\|tool\|>([\s\S]*?)<\|end\|>/g)].map((m) => m[1]);
}

/** Number of assistant turns already in the prompt. */
export function assistantTurns(prompt: string): number {
  return (prompt.match(/<\|assistant\|>/g) ?? []).length - 1;
}
