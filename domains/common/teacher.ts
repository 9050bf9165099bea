// Teacher policies: scripted, deliberately imperfect solvers that produce demonstration episodes for
// pretraining the embedded model, through the real agent loop and a real harness (so demonstrations
// have exactly the prompt formats a harness produces). Per the learning-dynamics lesson in
// docs/architecture, a teacher's imperfection lives in CHOICES a small model can learn to make
// differently (call the tool or guess; search or answer from memory; copy a listed move or write one
// freehand), not in token-level noise.
import type { GenerateRequest, GenerateResult, ModelBackend } from '../../model/backend';
import { SPECIAL_TOKENS, decodeTokens, encodeText } from '../../model/tokenizer';
import type { EnvTask } from '../types';
import { Rng } from './rng';

export interface TeacherTurn<Hidden> {
  task: EnvTask<Hidden>;
  /** The rendered prompt (special tokens by name), as the model would see it. */
  prompt: string;
  /** Model turns already taken in this episode. */
  turn: number;
  /** Seeded per model call (from the loop's seed), so demonstrations replay exactly. */
  rng: Rng;
}

/** One assistant message (without the end-of-turn token) for a turn. */
export type TeacherPolicy<Hidden> = (t: TeacherTurn<Hidden>) => string;

/** Contents of the tool messages in a rendered prompt, oldest first. */
export function toolMessagesOf(prompt: string): string[] {
  return [...prompt.matchAll(/<\|tool\|>([\s\S]*?)<\|end\|>/g)].map((m) => m[1]);
}

/** The assistant messages already in a rendered prompt, oldest first. */
export function assistantMessagesOf(prompt: string): string[] {
  return [...prompt.matchAll(/<\|assistant\|>([\s\S]*?)<\|end\|>/g)].map((m) => m[1]);
}

/**
 * A ModelBackend that answers with a teacher policy. It finds each prompt's task by its question text
 * (questions are unique within a split); an unknown prompt is an error, never a guess.
 */
export class TeacherBackend<Hidden> implements ModelBackend {
  private readonly byQuestion: Array<[string, EnvTask<Hidden>]>;

  constructor(
    tasks: readonly EnvTask<Hidden>[],
    private readonly policy: TeacherPolicy<Hidden>,
    readonly maxContext = 1024,
  ) {
    // Longest questions first, so a question that contains another one is matched correctly.
    this.byQuestion = tasks.map((t): [string, EnvTask<Hidden>] => [t.question, t]).sort((a, b) => b[0].length - a[0].length);
  }

  generate(requests: GenerateRequest[]): Promise<GenerateResult[]> {
    return Promise.resolve(requests.map((r) => this.one(r)));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private one(r: GenerateRequest): GenerateResult {
    const prompt = decodeTokens(r.promptTokens);
    const hit = this.byQuestion.find(([q]) => prompt.includes(q));
    if (!hit) throw new Error('TeacherBackend: no known task question in the prompt; pass the tasks being rolled out');
    const text = this.policy({ task: hit[1], prompt, turn: assistantMessagesOf(prompt).length, rng: new Rng(r.seed) });
    let tokens = [...encodeText(text), SPECIAL_TOKENS.END];
    let stopReason: GenerateResult['stopReason'] = 'stop-token';
    if (tokens.length > r.maxNewTokens) {
      tokens = tokens.slice(0, r.maxNewTokens);
      stopReason = 'max-new-tokens';
    }
    return { tokens, text: decodeTokens(tokens), logprobs: tokens.map(() => 0), stopReason };
  }
}
