// The model-backend interface the agent loop drives. The embedded default implements it with the
// onnxruntime-node KV-cache sampler; at scale an OpenAI-compatible client implements the same shape.

export interface GenerateRequest {
  /** Full prompt as token ids (already rendered with the chat template). */
  promptTokens: number[];
  maxNewTokens: number;
  temperature: number; // 1.0 for RSFT rollouts and mean@8
  topK: number; // 0 = off; 20 by default for rollouts
  topP: number; // 1.0 = off
  /** Generation stops after any of these token ids is produced (the id is included in `tokens`). */
  stopTokens: number[];
  /** Generation stops once the decoded text ends with any of these strings (included in `tokens`). */
  stopStrings?: string[];
  /** Seed of this request's own RNG stream: equal seeds and inputs give equal samples. */
  seed: number;
}

export type StopReason = 'stop-token' | 'stop-string' | 'max-new-tokens' | 'context-full';

export interface GenerateResult {
  tokens: number[]; // generated ids only (never the prompt)
  text: string; // decoded generated text (special tokens rendered by name)
  logprobs: number[]; // log p(token) under the sampling distribution's base model (before top-k/top-p), per generated token
  stopReason: StopReason;
  /** Present (true) only when a cancel signal stopped the row early; stopReason is then 'max-new-tokens'. */
  cancelled?: true;
}

export interface ModelBackend {
  /** Maximum total tokens (prompt + generated) a single sequence may hold. */
  readonly maxContext: number;
  /** Generates for a batch of independent requests; results are in request order. */
  generate(requests: GenerateRequest[]): Promise<GenerateResult[]>;
  /** Releases native resources. */
  close(): Promise<void>;
}
