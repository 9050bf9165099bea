// Benchmarks of the model runtime (not a test): ORT MatMul GFLOP/s, training tokens/s and achieved GFLOP/s,
// generation tokens/s, and peak RSS. Each training measurement runs in a child process so its peak RSS
// is its own. Usage: node --import tsx scripts/bench-runtime.ts [--quick]. `whale bench runtime` (bench/runtime.ts)
// reuses the measurements exported here.
import { spawnSync } from 'node:child_process';
import * as os from 'node:os';
import * as ort from 'onnxruntime-node';
import { countParams, forwardFlopsPerToken, modelConfig, PresetName } from '../model/config';
import { GraphBuilder } from '../model/graph/graph-builder';
import { sessionOptions } from '../model/runtime/ort-session';
import { Xoshiro128 } from '../common/xoshiro';
import { initParams } from '../model/checkpoints/init-params';
import { OrtSampler } from '../model/sampling/sampler';
import { Trainer, type StepPhases } from '../model/training/trainer';
import type { GenerateRequest } from '../model/backend';

export const FLOP_NOTE = 'FLOP/token (forward) = 2*(12*L*d^2 + d*V) + 4*L*T*d (matmuls incl. tied head, plus QK^T and PV over the full T x T); training = 3 x forward (attention recompute at T >= 512 not counted)';

/** Best-of-reps MatMul GFLOP/s (the machine is shared: the best run is the least disturbed). */
export async function matmulGflops(m: number, k: number, n: number, threads: number): Promise<number> {
  const b = new GraphBuilder('mm', 'float32');
  b.input('a', 'float32', [m, k]);
  b.input('b', 'float32', [k, n]);
  b.op('MatMul', ['a', 'b'], {}, 'y');
  b.output('y', 'float32', [m, n]);
  const s = await ort.InferenceSession.create(b.toBytes(), sessionOptions({ threads }));
  const rng = new Xoshiro128(1);
  const feeds = { a: new ort.Tensor('float32', Float32Array.from({ length: m * k }, () => rng.normal()), [m, k]), b: new ort.Tensor('float32', Float32Array.from({ length: k * n }, () => rng.normal()), [k, n]) };
  for (let i = 0; i < 3; i++) await s.run(feeds);
  let best = Infinity;
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await s.run(feeds);
    best = Math.min(best, performance.now() - t0);
  }
  await s.release();
  return (2 * m * k * n) / best / 1e6;
}

/** MatMul reference for a config: the mean over its block matmul shapes at 4096 rows. */
export async function configMatmulGflops(preset: PresetName, threads: number): Promise<number> {
  const d = modelConfig(preset).dModel;
  const shapes: [number, number, number][] = [[4096, d, 3 * d], [4096, d, 4 * d], [4096, 4 * d, d], [4096, d, d]];
  let sum = 0;
  for (const [m, k, n] of shapes) sum += await matmulGflops(m, k, n, threads);
  return sum / shapes.length;
}

/** `phases`: the median of each phase of a timed step (see StepPhases in model/training/batch.ts), ms. */
export interface TrainMeasure { medianMs: number; bestMs: number; tokensPerSec: number; bestTokensPerSec: number; gflops: number; bestGflops: number; matmulGflops: number; peakRssMiB: number; params: number; phases: StepPhases }

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function trainChild(preset: PresetName, rows: number, seqLen: number, threads: number, steps: number, spinning: boolean, deterministic: boolean): Promise<TrainMeasure> {
  const c = modelConfig(preset);
  // The MatMul reference is measured in the same process just before training, under the same load.
  const matmul = await configMatmulGflops(preset, threads);
  const trainer = Trainer.fromSeed(c, 1, { threads, spinning, deterministic });
  const rng = new Xoshiro128(2);
  const tokens = Array.from({ length: rows }, () => Int32Array.from({ length: seqLen + 1 }, () => rng.nextU32() % 256));
  const lossWeights = tokens.map((t) => new Float32Array(t.length).fill(1));
  for (let i = 0; i < 2; i++) await trainer.step({ tokens, lossWeights });
  const times: number[] = [];
  const phases: StepPhases[] = [];
  for (let i = 0; i < steps; i++) {
    const t0 = performance.now();
    const r = await trainer.step({ tokens, lossWeights });
    times.push(performance.now() - t0);
    if (r.phases) phases.push(r.phases);
  }
  const phase = (k: keyof StepPhases) => (phases.length ? median(phases.map((p) => p[k])) : 0);
  await trainer.close();
  const tok = rows * seqLen;
  const flops = 3 * forwardFlopsPerToken(c, seqLen) * tok;
  const med = median(times);
  const best = Math.min(...times);
  return { medianMs: med, bestMs: best, tokensPerSec: (tok / med) * 1000, bestTokensPerSec: (tok / best) * 1000, gflops: flops / med / 1e6, bestGflops: flops / best / 1e6, matmulGflops: matmul, peakRssMiB: process.resourceUsage().maxRSS / 1024, params: countParams(c), phases: { packMs: phase('packMs'), graphMs: phase('graphMs'), optimizerMs: phase('optimizerMs'), transferMs: phase('transferMs') } };
}

/** One training measurement in a child process; `deterministic` runs the trainer's deterministic mode at `threads`. */
export function runTrainInChild(preset: PresetName, rows: number, seqLen: number, threads: number, steps: number, spinning: boolean, deterministic = false): TrainMeasure {
  const r = spawnSync(process.execPath, ['--import', 'tsx', __filename, '--child', preset, String(rows), String(seqLen), String(threads), String(steps), spinning ? 'spin' : 'nospin', deterministic ? 'det' : 'nondet'], { encoding: 'utf8' });
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`training benchmark child failed: ${r.stderr}`);
  return JSON.parse(line.slice(7)) as TrainMeasure;
}

export async function generationTokensPerSec(preset: PresetName, batch: number, promptLen: number, newTokens: number, threads: number, reps: number): Promise<{ median: number; best: number }> {
  const c = modelConfig(preset);
  const sampler = await OrtSampler.create(c, initParams(c, 1), { threads, maxBatchRows: Math.max(64, batch) });
  const rng = new Xoshiro128(3);
  // Distinct prompts (no shared prefill), a fixed number of new tokens per row (no stop tokens).
  const reqs: GenerateRequest[] = Array.from({ length: batch }, (_, i) => ({ promptTokens: Array.from({ length: promptLen }, () => rng.nextU32() % 256), maxNewTokens: newTokens, temperature: 1, topK: 20, topP: 1, stopTokens: [], seed: i }));
  await sampler.generate(reqs.slice(0, 1));
  const rates: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    const out = await sampler.generate(reqs);
    const ms = performance.now() - t0;
    rates.push((out.reduce((a, x) => a + x.tokens.length, 0) / ms) * 1000);
  }
  await sampler.close();
  return { median: median(rates), best: Math.max(...rates) };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    const [preset, rows, seqLen, threads, steps, spin, det] = args.slice(1);
    const m = await trainChild(preset as PresetName, Number(rows), Number(seqLen), Number(threads), Number(steps), spin === 'spin', det === 'det');
    process.stdout.write(`RESULT ${JSON.stringify(m)}\n`);
    return;
  }
  const quick = args.includes('--quick');
  console.log(`# bench-runtime  onnxruntime-node ${ort.env.versions.common}  cpus ${os.cpus().length}  load avg (1/5 min) at start ${os.loadavg().slice(0, 2).map((x) => x.toFixed(2)).join(' / ')}`);
  console.log('# the machine is shared with other work: every figure gives the median and the best (least disturbed) run');
  console.log('\n## ORT MatMul (fp32), best of 20 runs, GFLOP/s');
  for (const threads of [1, 2]) {
    for (const [m, k, n] of [[4096, 128, 512], [4096, 512, 128], [4096, 192, 768], [4096, 768, 192], [1024, 1024, 1024]] as const) {
      console.log(`threads ${threads}  [${m}x${k}] @ [${k}x${n}]  ${(await matmulGflops(m, k, n, threads)).toFixed(1)}`);
    }
  }
  console.log(`\n## Training (one AdamW step per batch, fp32)\n# ${FLOP_NOTE}\n# matmul = mean best-of-20 MatMul GFLOP/s over the config's block shapes (4096 rows), same thread count, same process, just before training; ratio = achieved / matmul`);
  for (const preset of ['embedded-1m', 'embedded-3m'] as PresetName[]) {
    for (const threads of [1, 2]) {
      for (const [rows, seqLen] of [[32, 128], [4, 1024]] as const) {
        const steps = quick ? 3 : preset === 'embedded-3m' ? 5 : 8;
        // Two threads also without ORT's thread spinning (slower on a quiet machine, steadier under load) and
        // in deterministic mode (rows split across the threads at every length).
        const variants = threads === 2 ? [{ spinning: true, det: false }, { spinning: false, det: false }, { spinning: true, det: true }] : [{ spinning: true, det: false }];
        for (const { spinning, det } of variants) {
          const m = runTrainInChild(preset, rows, seqLen, threads, steps, spinning, det);
          console.log(`${preset} (${m.params} params)  threads ${threads}${spinning ? '' : ' (no spin)'}${det ? ' deterministic' : ''}  ${rows}x${seqLen}  median ${m.medianMs.toFixed(0)} ms/step = ${m.tokensPerSec.toFixed(0)} tok/s, ${m.gflops.toFixed(1)} GFLOP/s | best ${m.bestMs.toFixed(0)} ms = ${m.bestTokensPerSec.toFixed(0)} tok/s, ${m.bestGflops.toFixed(1)} GFLOP/s | matmul ${m.matmulGflops.toFixed(1)}  ratio median ${(m.gflops / m.matmulGflops).toFixed(2)} best ${(m.bestGflops / m.matmulGflops).toFixed(2)} | peak RSS ${m.peakRssMiB.toFixed(0)} MiB`);
        }
      }
    }
  }
  const promptLen = 64;
  const newTokens = 128;
  console.log(`\n## Generation (embedded-1m, prompt ${promptLen} tokens, ${newTokens} new tokens per row, top-k 20, distinct prompts; time includes prefill)`);
  for (const threads of [1, 2]) {
    for (const batch of [1, 32]) {
      const g = await generationTokensPerSec('embedded-1m', batch, promptLen, newTokens, threads, quick ? 2 : 5);
      console.log(`threads ${threads}  batch ${batch}  median ${g.median.toFixed(0)} tok/s  best ${g.best.toFixed(0)} tok/s`);
    }
  }
  console.log(`\npeak RSS of this (parent) process: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB; training peaks are per child above`);
  console.log(`load avg (1/5 min) at end ${os.loadavg().slice(0, 2).map((x) => x.toFixed(2)).join(' / ')}`);
}

if (require.main === module) void main();
