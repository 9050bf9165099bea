// Pretraining of a domain's base policy: a teacher corpus (training/corpus.ts) trained with the same SFT
// code RSFT uses (training/rsft.ts runSftEpoch), in chunks of minibatches that share one length bucket
// (a minibatch pads to its longest row, so mixing 200- and 300-token examples would double the cost).
// Deterministic from the seed for a fixed step count; a wall-clock cap may stop it earlier (the result
// records the steps actually taken, so the run can be repeated exactly with `steps`).
import { bucketLength, modelConfig, Trainer, type Checkpoint, type PresetName, type StepHyperparams } from '../model';
import type { TrainingExample } from '../agent/trajectory';
import { getDomain, type BuiltinDomainName } from '../domains/registry';
import { buildPretrainCorpus, defaultHarnessMix, type CorpusHarness, type PretrainCorpus } from './corpus';
import { mixSeed, planMinibatches, runSftEpoch } from './rsft';

export interface PretrainOptions {
  domain: BuiltinDomainName;
  seed: number;
  preset: PresetName;
  /** Overrides the preset's context (e.g. tests on 'tiny', whose 64 tokens hold no episode). */
  contextLength?: number;
  /** Optimizer steps to plan the learning-rate schedule over (and stop at). */
  steps?: number;
  /** Wall-clock cap in minutes; without `steps` the schedule follows elapsed time instead. */
  minutes?: number;
  minibatchSize: number;
  /** Peak learning rate (linear warm-up, cosine decay to `minLrRatio` of it). */
  lr: number;
  warmupSteps: number;
  minLrRatio: number;
  /** Minibatches per chunk (one runSftEpoch call, one learning rate, one length bucket). */
  chunkMinibatches: number;
  /** Corpus: demonstrations per task scale of the default harness mix, or an explicit mix. */
  corpusScale: number;
  harnesses?: CorpusHarness[];
  /** Continue from these weights (a fresh AdamW) instead of a seeded initialisation; the config must match. */
  init?: Checkpoint;
  maxTasks?: number;
  threads?: number;
  /** Called every `progressEverySteps` steps and at the end. */
  onProgress?: (p: PretrainProgress) => void;
  progressEverySteps?: number;
}

export const DEFAULT_PRETRAIN: Omit<PretrainOptions, 'domain'> = {
  seed: 1,
  preset: 'embedded-1m',
  minutes: 12,
  minibatchSize: 16,
  lr: 2e-3,
  warmupSteps: 100,
  minLrRatio: 0.1,
  chunkMinibatches: 8,
  corpusScale: 1,
};

export interface PretrainProgress {
  step: number;
  plannedSteps: number | null;
  elapsedSec: number;
  /** Training tokens (prompt + generated, unpadded) per second since the start of training. */
  tokensPerSec: number;
  lr: number;
  /** Exponential moving average of the minibatch loss (generated tokens only). */
  lossEma: number;
  epoch: number;
}

export interface PretrainResult {
  checkpoint: Checkpoint;
  corpus: PretrainCorpus['stats'];
  steps: number;
  epochs: number;
  wallSec: number;
  trainSec: number;
  corpusSec: number;
  /** Mean minibatch loss over the last 5% of steps (at least the last 10). */
  finalLoss: number;
  firstLoss: number;
  tokensPerSec: number;
  stoppedBy: 'steps' | 'minutes';
}

export function scheduledLr(opts: Pick<PretrainOptions, 'lr' | 'warmupSteps' | 'minLrRatio'>, step: number, progress: number): number {
  if (step < opts.warmupSteps) return (opts.lr * (step + 1)) / opts.warmupSteps;
  const p = Math.min(1, Math.max(0, progress));
  return opts.lr * (opts.minLrRatio + (1 - opts.minLrRatio) * 0.5 * (1 + Math.cos(Math.PI * p)));
}

/** One epoch's chunks: a seeded shuffle, grouped by length bucket, cut into chunks, chunk order shuffled. */
export function planEpochChunks(examples: readonly TrainingExample[], contextLength: number, chunkSize: number, seed: number, epoch: number): TrainingExample[][] {
  const [shuffled] = planMinibatches(examples, Math.max(1, examples.length), seed, mixSeed(epoch, 0xe90c));
  const byBucket = new Map<number, TrainingExample[]>();
  for (const e of shuffled ?? []) {
    const b = bucketLength(e.tokens.length - 1, contextLength);
    const list = byBucket.get(b);
    if (list) list.push(e);
    else byBucket.set(b, [e]);
  }
  const chunks: TrainingExample[][] = [];
  for (const b of [...byBucket.keys()].sort((x, y) => x - y)) {
    const list = byBucket.get(b) ?? [];
    for (let i = 0; i < list.length; i += chunkSize) chunks.push(list.slice(i, i + chunkSize));
  }
  const [order] = planMinibatches(chunks, Math.max(1, chunks.length), seed, mixSeed(epoch, 0xc4a7));
  return order ?? [];
}

export async function pretrainBasePolicy(options: PretrainOptions): Promise<PretrainResult> {
  const o = options;
  if (o.steps === undefined && o.minutes === undefined) throw new Error('pretraining needs a step count or a time budget (minutes)');
  const started = Date.now();
  const config = modelConfig({ ...modelConfig(o.preset), ...(o.contextLength === undefined ? {} : { contextLength: o.contextLength }) });
  const instance = getDomain(o.domain).load({ kind: 'synthetic' });
  const corpus = await buildPretrainCorpus({
    domain: o.domain, instance, harnesses: o.harnesses ?? defaultHarnessMix(o.domain, o.corpusScale), seed: o.seed, contextLength: config.contextLength, maxTasks: o.maxTasks,
  });
  if (corpus.examples.length === 0) throw new Error(`the ${o.domain} teacher corpus is empty: pass at least one harness with demonstrations`);
  const corpusSec = (Date.now() - started) / 1000;
  if (o.init && JSON.stringify(o.init.config) !== JSON.stringify(config)) throw new Error(`the initial checkpoint's config ${JSON.stringify(o.init.config)} does not match preset ${o.preset}`);
  const trainer = o.init ? new Trainer(config, { params: o.init.params.slice() }, { threads: o.threads }) : Trainer.fromSeed(config, mixSeed(o.seed, 0x1417), { threads: o.threads });
  const trainStart = Date.now();
  const deadline = o.minutes === undefined ? Infinity : started + o.minutes * 60_000;
  const losses: number[] = [];
  let step = 0;
  let tokens = 0;
  let lossEma = NaN;
  let epoch = 0;
  let chunkIndex = 0;
  let trainedExamples = 0;
  let stoppedBy: PretrainResult['stoppedBy'] = 'steps';
  const progressOf = () => Math.max(o.steps === undefined ? 0 : step / o.steps, o.minutes === undefined ? 0 : (Date.now() - started) / (deadline - started));
  const report = (lr: number) => {
    const elapsed = (Date.now() - trainStart) / 1000;
    o.onProgress?.({ step, plannedSteps: o.steps ?? null, elapsedSec: elapsed, tokensPerSec: tokens / Math.max(1e-9, elapsed), lr, lossEma, epoch });
  };
  try {
    outer: for (;;) {
      for (const chunk of planEpochChunks(corpus.examples, config.contextLength, o.chunkMinibatches * o.minibatchSize, o.seed, epoch)) {
        if (o.steps !== undefined && step >= o.steps) break outer;
        if (Date.now() >= deadline) {
          stoppedBy = 'minutes';
          break outer;
        }
        const remaining = o.steps === undefined ? Infinity : o.steps - step;
        const rows = chunk.slice(0, Math.min(chunk.length, remaining * o.minibatchSize));
        const lr = scheduledLr(o, step, progressOf());
        const hyper: StepHyperparams = { lr, weightDecay: 0.1, clipNorm: 1, beta1: 0.9, beta2: 0.95, eps: 1e-8 };
        await runSftEpoch(trainer, rows, {
          minibatchSize: o.minibatchSize, hyper, seed: o.seed, step: mixSeed(epoch, chunkIndex++),
          onMinibatch: (_done, _total, loss) => {
            step++;
            losses.push(loss);
            lossEma = Number.isNaN(lossEma) ? loss : 0.98 * lossEma + 0.02 * loss;
            if (step % (o.progressEverySteps ?? 25) === 0) report(lr);
            return Promise.resolve();
          },
        });
        tokens += rows.reduce((n, e) => n + e.tokens.length, 0);
        trainedExamples += rows.length;
      }
      epoch++;
    }
    report(scheduledLr(o, step, progressOf()));
    const state = await trainer.state();
    const total = state.params.length;
    // The base policy is weights only: zero AdamW moments and step 0 (every fine-tune starts a fresh AdamW).
    const checkpoint: Checkpoint = { config, params: state.params, adamM: new Float32Array(total), adamV: new Float32Array(total), step: 0 };
    const tail = losses.slice(-Math.max(10, Math.ceil(losses.length * 0.05)));
    const trainSec = (Date.now() - trainStart) / 1000;
    return {
      checkpoint, corpus: corpus.stats, steps: step, epochs: trainedExamples / Math.max(1, corpus.examples.length), wallSec: (Date.now() - started) / 1000, trainSec, corpusSec,
      finalLoss: tail.reduce((a, b) => a + b, 0) / Math.max(1, tail.length), firstLoss: losses[0] ?? NaN, tokensPerSec: tokens / Math.max(1e-9, trainSec), stoppedBy,
    };
  } finally {
    await trainer.close();
  }
}
