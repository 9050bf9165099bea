// Teacher policies: scripted, deliberately imperfect solvers that produce demonstration episodes for
// pretraining the embedded model, through the real agent loop and a real harness (so demonstrations
// have exactly the prompt formats a harness produces). Per the learning-dynamics lesson in
// docs/architecture, a teacher's imperfection lives in CHOICES a small model can learn to make
// differently (call the tool or guess; search or answer from memory; copy a listed move or write one
// freehand), not in token-level noise.
import { deriveSeed } from '../../agent/seeds';
import type { GenerateRequest, GenerateResult, ModelBackend } from '../../model/backend';
import { SPECIAL_TOKENS, decodeTokens, encodeText } from '../../model/tokenizer';
import type { EnvTask } from '../types';
import { Rng } from '../../common/rng';

export interface TeacherTurn<Hidden> {
  task: EnvTask<Hidden>;
  /** The rendered prompt (special tokens by name), as the model would see it. */
  prompt: string;
  /** The loop's turn number of this model call (0 = first), retries included. */
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

/** The rollout a TeacherBackend serves: the same values passed to runEpisodes. */
export interface TeacherRollout {
  runSeed: number;
  step: number;
  samplesPerTask: number;
  /** The harness's maxTurns (an upper bound is fine). */
  maxTurns: number;
}

/**
 * Finds the task and turn of a model call from its sampling seed: the loop derives each call's seed from
 * (runSeed, step, task id, sample, turn) (agent/seeds.ts), so this works even when a harness rewrites the
 * context and the question is no longer in the prompt. A rare 31-bit seed collision is resolved by the
 * question text.
 */
export class TaskLocator<Hidden> {
  private readonly bySeed = new Map<number, Array<{ task: EnvTask<Hidden>; turn: number }>>();

  constructor(tasks: readonly EnvTask<Hidden>[], rollout: TeacherRollout) {
    for (const task of tasks) {
      for (let sampleIndex = 0; sampleIndex < rollout.samplesPerTask; sampleIndex++) {
        for (let turn = 0; turn < rollout.maxTurns; turn++) {
          const seed = deriveSeed({ runSeed: rollout.runSeed, step: rollout.step, promptId: task.id, sampleIndex, turn });
          const list = this.bySeed.get(seed);
          if (list) list.push({ task, turn });
          else this.bySeed.set(seed, [{ task, turn }]);
        }
      }
    }
  }

  locate(seed: number, prompt: string): { task: EnvTask<Hidden>; turn: number } | null {
    const hits = this.bySeed.get(seed) ?? [];
    if (hits.length <= 1) return hits[0] ?? null;
    return hits.find((h) => prompt.includes(h.task.question)) ?? null;
  }
}

/**
 * A ModelBackend that answers with a teacher policy. Build it with the tasks and the rollout settings
 * the runEpisodes call uses; a model call it cannot place is an error, never a guess.
 */
export class TeacherBackend<Hidden> implements ModelBackend {
  private readonly locator: TaskLocator<Hidden>;

  constructor(
    tasks: readonly EnvTask<Hidden>[],
    private readonly policy: TeacherPolicy<Hidden>,
    rollout: TeacherRollout,
    readonly maxContext = 1024,
  ) {
    this.locator = new TaskLocator(tasks, rollout);
  }

  generate(requests: GenerateRequest[]): Promise<GenerateResult[]> {
    return Promise.resolve(requests.map((r) => this.one(r)));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private one(r: GenerateRequest): GenerateResult {
    const prompt = decodeTokens(r.promptTokens);
    const hit = this.locator.locate(r.seed, prompt);
    if (!hit) throw new Error('TeacherBackend: a model call from an unknown rollout; pass the same tasks, runSeed, step and samplesPerTask as runEpisodes');
    const text = this.policy({ task: hit.task, prompt, turn: hit.turn, rng: new Rng(r.seed) });
    let tokens = [...encodeText(text), SPECIAL_TOKENS.END];
    let stopReason: GenerateResult['stopReason'] = 'stop-token';
    if (tokens.length > r.maxNewTokens) {
      tokens = tokens.slice(0, r.maxNewTokens);
      stopReason = 'max-new-tokens';
    }
    return { tokens, text: decodeTokens(tokens), logprobs: tokens.map(() => 0), stopReason };
  }
}
