// Benchmarks of the model runtime (not a test): ORT MatMul GFLOP/s, training tokens/s and achieved GFLOP/s,
// generation tokens/s, and peak RSS. Each training measurement runs in a child process so its peak RSS
// is its own. Usage: node --import tsx scripts/bench-runtime.ts [--quick]
import { spawnSync } from 'node:child_process';
import * as os from 'node:os';
import * as ort from 'onnxruntime-node';
import { countParams, forwardFlopsPerToken, modelConfig, PresetName } from '../model/config';
import { GraphBuilder } from '../model/graph-builder';
import { initParams, Rng } from '../model/init';
import { OrtSampler } from '../model/sampler';
import { Trainer } from '../model/trainer';
import type { GenerateRequest } from '../model/backend';

const FLOP_NOTE = 'FLOP/token (forward) = 2*(12*L*d^2 + d*V) + 4*L*T*d (matmuls incl. tied head, plus QK^T and PV over the full T x T); training = 3 x forward (attention recompute at T >= 512 not counted)';

async function matmulGflops(m: number, k: number, n: number, threads: number): Promise<number> {
  const b = new GraphBuilder('mm', 'float32');
  b.input('a', 'float32', [m, k]);
  b.input('b', 'float32', [k, n]);
  b.op('MatMul', ['a', 'b'], {}, 'y');
  b.output('y', 'float32', [m, n]);
  const s = await ort.InferenceSession.create(b.toBytes(), { intraOpNumThreads: threads, interOpNumThreads: 1 });
  const rng = new Rng(1);
  const feeds = { a: new ort.Tensor('float32', Float32Array.from({ length: m * k }, () => rng.normal()), [m, k]), b: new ort.Tensor('float32', Float32Array.from({ length: k * n }, () => rng.normal()), [k, n]) };
  for (let i = 0; i < 3; i++) await s.run(feeds);
  const reps = 20;
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) await s.run(feeds);
  const ms = (performance.now() - t0) / reps;
  await s.release();
  return (2 * m * k * n) / ms / 1e6;
}

/** MatMul reference for a config: the mean over its block matmul shapes at 4096 rows. */
async function configMatmulGflops(preset: PresetName, threads: number): Promise<number> {
  const d = modelConfig(preset).dModel;
  const shapes: [number, number, number][] = [[4096, d, 3 * d], [4096, d, 4 * d], [4096, 4 * d, d], [4096, d, d]];
  let sum = 0;
  for (const [m, k, n] of shapes) sum += await matmulGflops(m, k, n, threads);
  return sum / shapes.length;
}

interface TrainMeasure { msPerStep: number; tokensPerSec: number; gflops: number; peakRssMiB: number; params: number }

async function trainChild(preset: PresetName, rows: number, seqLen: number, threads: number, steps: number): Promise<TrainMeasure> {
  const c = modelConfig(preset);
  const trainer = Trainer.fromSeed(c, 1, { threads });
  const rng = new Rng(2);
  const tokens = Array.from({ length: rows }, () => Int32Array.from({ length: seqLen + 1 }, () => rng.nextU32() % 256));
  const lossWeights = tokens.map((t) => new Float32Array(t.length).fill(1));
  for (let i = 0; i < 2; i++) await trainer.step({ tokens, lossWeights });
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) await trainer.step({ tokens, lossWeights });
  const ms = (performance.now() - t0) / steps;
  await trainer.close();
  const tok = rows * seqLen;
  return { msPerStep: ms, tokensPerSec: (tok / ms) * 1000, gflops: (3 * forwardFlopsPerToken(c, seqLen) * tok) / ms / 1e6, peakRssMiB: process.resourceUsage().maxRSS / 1024, params: countParams(c) };
}

function runTrainInChild(preset: PresetName, rows: number, seqLen: number, threads: number, steps: number): TrainMeasure {
  const r = spawnSync(process.execPath, ['--import', 'tsx', __filename, '--child', preset, String(rows), String(seqLen), String(threads), String(steps)], { encoding: 'utf8' });
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`training benchmark child failed: ${r.stderr}`);
  return JSON.parse(line.slice(7)) as TrainMeasure;
}

async function generationTokensPerSec(preset: PresetName, batch: number, promptLen: number, newTokens: number, threads: number): Promise<{ tokensPerSec: number; ms: number }> {
  const c = modelConfig(preset);
  const sampler = await OrtSampler.create(c, initParams(c, 1), { threads, maxBatchRows: Math.max(64, batch) });
  const rng = new Rng(3);
  // Distinct prompts (no shared prefill), a fixed number of new tokens per row (no stop tokens).
  const reqs: GenerateRequest[] = Array.from({ length: batch }, (_, i) => ({ promptTokens: Array.from({ length: promptLen }, () => rng.nextU32() % 256), maxNewTokens: newTokens, temperature: 1, topK: 20, topP: 1, stopTokens: [], seed: i }));
  await sampler.generate(reqs.slice(0, 1));
  const t0 = performance.now();
  const out = await sampler.generate(reqs);
  const ms = performance.now() - t0;
  await sampler.close();
  const n = out.reduce((a, r) => a + r.tokens.length, 0);
  return { tokensPerSec: (n / ms) * 1000, ms };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    const [preset, rows, seqLen, threads, steps] = args.slice(1);
    const m = await trainChild(preset as PresetName, Number(rows), Number(seqLen), Number(threads), Number(steps));
    process.stdout.write(`RESULT ${JSON.stringify(m)}\n`);
    return;
  }
  const quick = args.includes('--quick');
  const [cpus, load] = [os.cpus().length, os.loadavg()[0]];
  console.log(`# bench-runtime  onnxruntime-node ${ort.env.versions.common}  cpus ${cpus}  load avg (1 min) before start ${load.toFixed(2)}`);
  console.log('\n## ORT MatMul (fp32), GFLOP/s');
  for (const threads of [1, 2]) {
    for (const [m, k, n] of [[4096, 128, 512], [4096, 512, 128], [4096, 192, 768], [4096, 768, 192], [1024, 1024, 1024]] as const) {
      console.log(`threads ${threads}  [${m}x${k}] @ [${k}x${n}]  ${(await matmulGflops(m, k, n, threads)).toFixed(1)}`);
    }
  }
  console.log(`\n## Training (one AdamW step per batch, fp32)\n# ${FLOP_NOTE}\n# ratio = achieved / mean MatMul GFLOP/s over the config's block matmul shapes (4096 rows) at the same thread count`);
  const configs: PresetName[] = ['embedded-1m', 'embedded-3m'];
  for (const preset of configs) {
    for (const threads of [1, 2]) {
      const mm = await configMatmulGflops(preset, threads);
      for (const [rows, seqLen] of [[32, 128], [4, 1024]] as const) {
        const m = runTrainInChild(preset, rows, seqLen, threads, quick ? 2 : rows * seqLen >= 4096 && preset === 'embedded-3m' ? 3 : 5);
        console.log(`${preset} (${m.params} params)  threads ${threads}  ${rows}x${seqLen}  ${m.msPerStep.toFixed(0)} ms/step  ${m.tokensPerSec.toFixed(0)} tok/s  ${m.gflops.toFixed(1)} GFLOP/s  matmul ${mm.toFixed(1)}  ratio ${(m.gflops / mm).toFixed(2)}  peak RSS ${m.peakRssMiB.toFixed(0)} MiB`);
      }
    }
  }
  console.log('\n## Generation (embedded-1m, prompt 64 tokens, 128 new tokens per row, top-k 20, distinct prompts; includes prefill)');
  for (const threads of [1, 2]) {
    for (const batch of [1, 32]) {
      const g = await generationTokensPerSec('embedded-1m', batch, 64, 128, threads);
      console.log(`threads ${threads}  batch ${batch}  ${g.tokensPerSec.toFixed(0)} tok/s  (${g.ms.toFixed(0)} ms)`);
    }
  }
  console.log(`\npeak RSS of this (parent) process: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB; training peaks are per child above`);
}

void main();
