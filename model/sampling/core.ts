// The sampler engine, run inside OrtSampler's worker thread. Each distinct prompt is prefilled once
// (transformers.js-layout decoder, right-padded batches) and its K/V copied into the slots of every row
// that samples from it; rows then decode together through the step graph against a fixed-slot cache held
// in JS (slot-cache.ts), so no step copies the whole cache.
import * as ort from 'onnxruntime-node';
import type { GenerateRequest, GenerateResult, StopReason } from '../backend';
import { ModelConfig } from '../config';
import { buildHfDecoderGraph, buildStepGraph } from '../graph/decoder-graph';
import { Xoshiro128 } from '../../common/xoshiro';
import { createSession } from '../runtime/ort-session';
import { sampleToken } from './token-sampling';
import { decodeTokens, encodeText, SPECIAL_TOKENS } from '../tokenizer';
import { DecodeRow, SlotArena, SlotCache } from './slot-cache';
import type { Prefill, SamplerOptions } from './types';

/**
 * Prefill batching: distinct prompts sorted by length, up to 16 rows and ~4096 padded tokens per ORT run
 * (each run blocks the calling thread, so runs are kept short).
 */
const PREFILL_ROWS = 16;
const PREFILL_TOKENS = 4096;

export class SamplerCore {
  readonly maxContext: number;
  /** Counters for tests and benchmarks: distinct prompts prefilled, ORT runs, tokens generated. */
  readonly stats = { prefilledPrompts: 0, prefillRuns: 0, decodeSteps: 0, generatedTokens: 0 };
  private queue: Promise<unknown> = Promise.resolve();
  /** The KV cache's memory, reused by every wave (generate calls run one at a time). */
  private readonly arena: SlotArena;

  private constructor(
    readonly config: ModelConfig,
    private readonly prefillSession: ort.InferenceSession,
    private readonly stepSession: ort.InferenceSession,
    private readonly maxBatchRows: number,
  ) {
    this.maxContext = config.contextLength;
    this.arena = new SlotArena(config.nLayers);
  }

  static async create(config: ModelConfig, params: Float32Array, options: SamplerOptions = {}): Promise<SamplerCore> {
    const ortOptions = { ...options, spinning: options.spinning ?? false };
    const [prefill, step] = await Promise.all([createSession(buildHfDecoderGraph(config, params), ortOptions), createSession(buildStepGraph(config, params), ortOptions)]);
    return new SamplerCore(config, prefill, step, Math.max(1, options.maxBatchRows ?? 64));
  }

  /** Requests are served one generate() call at a time (the sessions are shared). */
  generate(requests: GenerateRequest[], cancel?: Int32Array): Promise<GenerateResult[]> {
    const run = this.queue.then(() => this.generateNow(requests, cancel));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async generateNow(requests: GenerateRequest[], cancel?: Int32Array): Promise<GenerateResult[]> {
    requests.forEach((r, i) => this.validate(r, i));
    const results: GenerateResult[] = new Array(requests.length);
    for (let start = 0; start < requests.length; start += this.maxBatchRows) {
      const wave = requests.slice(start, start + this.maxBatchRows);
      const out = await this.runWave(wave, cancel && ((i: number) => Atomics.load(cancel, start + i) !== 0));
      out.forEach((r, i) => (results[start + i] = r));
    }
    return results;
  }

  private validate(r: GenerateRequest, i: number): void {
    const V = this.config.vocabSize;
    if (!Array.isArray(r.promptTokens) || r.promptTokens.length === 0) throw new Error(`request ${i}: promptTokens must be a non-empty array of token ids`);
    if (r.promptTokens.some((t) => !Number.isInteger(t) || t < 0 || t >= V)) throw new Error(`request ${i}: promptTokens must be integers in [0, ${V})`);
    if (!Number.isInteger(r.maxNewTokens) || r.maxNewTokens < 0) throw new Error(`request ${i}: maxNewTokens must be a non-negative integer`);
    if (!Number.isFinite(r.seed)) throw new Error(`request ${i}: seed must be a finite number`);
  }

  /** Prefills distinct prompts in right-padded batches through the transformers.js-layout decoder. */
  private async prefillAll(prompts: number[][]): Promise<Prefill[]> {
    const order = prompts.map((_, i) => i).sort((x, y) => prompts[x].length - prompts[y].length);
    const out: Prefill[] = new Array(prompts.length);
    for (let start = 0; start < order.length; ) {
      let end = start + 1;
      while (end < order.length && end - start < PREFILL_ROWS && (end - start + 1) * prompts[order[end]].length <= PREFILL_TOKENS) end++;
      const idx = order.slice(start, end);
      const done = await this.prefillBatch(idx.map((i) => prompts[i]));
      idx.forEach((i, j) => (out[i] = done[j]));
      start = end;
    }
    this.stats.prefilledPrompts += prompts.length;
    return out;
  }

  private async prefillBatch(prompts: number[][]): Promise<Prefill[]> {
    const c = this.config;
    const n = prompts.length;
    const W = Math.max(...prompts.map((p) => p.length));
    const hd = c.dModel / c.nHeads;
    const ids = new BigInt64Array(n * W).fill(BigInt(SPECIAL_TOKENS.PAD));
    const mask = new BigInt64Array(n * W);
    const pos = new BigInt64Array(n * W);
    prompts.forEach((p, r) => {
      for (let t = 0; t < W; t++) pos[r * W + t] = BigInt(t);
      for (let t = 0; t < p.length; t++) {
        ids[r * W + t] = BigInt(p[t]);
        mask[r * W + t] = 1n;
      }
    });
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', ids, [n, W]),
      attention_mask: new ort.Tensor('int64', mask, [n, W]),
      position_ids: new ort.Tensor('int64', pos, [n, W]),
    };
    const empty = new Float32Array(0);
    for (let l = 0; l < c.nLayers; l++) {
      feeds[`past_key_values.${l}.key`] = new ort.Tensor('float32', empty, [n, c.nHeads, 0, hd]);
      feeds[`past_key_values.${l}.value`] = new ort.Tensor('float32', empty, [n, c.nHeads, 0, hd]);
    }
    const out = await this.prefillSession.run(feeds);
    this.stats.prefillRuns++;
    const logits = out.logits.data as Float32Array;
    const keys = Array.from({ length: c.nLayers }, (_, l) => out[`present.${l}.key`].data as Float32Array);
    const values = Array.from({ length: c.nLayers }, (_, l) => out[`present.${l}.value`].data as Float32Array);
    const V = c.vocabSize;
    return prompts.map((p, r) => ({ keys, values, row: r, width: W, lastLogits: logits.slice((r * W + p.length - 1) * V, (r * W + p.length) * V) }));
  }

  /** `cancelled(i)`: row i was withdrawn by the caller (checked before prefill and before every decode step). */
  private async runWave(requests: GenerateRequest[], cancelled?: (i: number) => boolean): Promise<GenerateResult[]> {
    const c = this.config;
    const V = c.vocabSize;
    const rows: DecodeRow[] = requests.map((req, index) => ({ index, req, rng: new Xoshiro128(req.seed), tokens: [], logprobs: [], pos: req.promptTokens.length, stop: undefined, stopTail: Math.max(0, ...(req.stopStrings ?? []).map((s) => encodeText(s).length + 4)) }));
    for (const row of rows) {
      if (cancelled?.(row.index)) row.stop = 'cancelled';
      else if (row.req.maxNewTokens === 0) row.stop = 'max-new-tokens';
      else if (row.req.promptTokens.length >= this.maxContext) row.stop = 'context-full';
    }
    const live = rows.filter((r) => !r.stop);
    const distinct = new Map<string, number[]>();
    for (const row of live) distinct.set(row.req.promptTokens.join(','), row.req.promptTokens);
    const filled = await this.prefillAll([...distinct.values()]);
    const prefills = new Map<string, Prefill>([...distinct.keys()].map((k, i) => [k, filled[i]]));
    const scratch = { ids: new Int32Array(V), probs: new Float64Array(V) };
    const cache = new SlotCache(c, live, this.maxContext, this.arena);
    live.forEach((row, slot) => {
      const pre = prefills.get(row.req.promptTokens.join(',')) as Prefill;
      cache.fillPrompt(slot, row.req.promptTokens.length, pre);
      this.accept(row, sampleToken(pre.lastLogits, 0, V, row.req, row.rng, scratch));
    });
    prefills.clear();
    while (cache.rows.some((r) => !r.stop)) {
      if (cancelled) for (const row of cache.rows) if (!row.stop && cancelled(row.index)) row.stop = 'cancelled';
      if (!cache.rows.some((r) => !r.stop)) break;
      cache.prepare();
      const out = await this.stepSession.run(cache.feeds());
      this.stats.decodeSteps++;
      const logits = out.logits.data as Float32Array;
      cache.store(out);
      cache.rows.forEach((row, slot) => {
        if (row.stop) return;
        this.accept(row, sampleToken(logits, slot * V, V, row.req, row.rng, scratch));
      });
    }
    return rows.map((r) => ({
      tokens: r.tokens, text: decodeTokens(r.tokens), logprobs: r.logprobs,
      ...(r.stop === 'cancelled' ? { stopReason: 'max-new-tokens' as const, cancelled: true as const } : { stopReason: r.stop as StopReason }),
    }));
  }

  /** Appends a sampled token and decides whether the row stops (first matching reason wins). */
  private accept(row: DecodeRow, s: { token: number; logprob: number }): void {
    row.tokens.push(s.token);
    this.stats.generatedTokens++;
    row.logprobs.push(s.logprob);
    const req = row.req;
    if (req.stopTokens.includes(s.token)) row.stop = 'stop-token';
    else if (row.stopTail > 0 && (req.stopStrings ?? []).some((str) => str.length > 0 && decodeTokens(row.tokens.slice(-row.stopTail)).endsWith(str))) row.stop = 'stop-string';
    else if (row.tokens.length >= req.maxNewTokens) row.stop = 'max-new-tokens';
    else if (req.promptTokens.length + row.tokens.length >= this.maxContext) row.stop = 'context-full';
  }

  async close(): Promise<void> {
    await this.queue;
    await this.prefillSession.release();
    await this.stepSession.release();
  }
}
