// `whale pretrain`: pretrains a domain's base policy from its teacher's demonstrations (training/pretrain.ts)
// and writes data/base-policies/<domain>.ckpt with its .json manifest (training/base-policy.ts).
import type { Command } from 'commander';
import { countParams, decodeCheckpoint, encodeCheckpoint, modelConfig, PRESETS, type PresetName } from '../model';
import { DOMAINS, type BuiltinDomainName } from '../domains/registry';
import { existsSync, readFileSync } from 'node:fs';
import { basePolicyManifestSchema, basePolicyPaths, writeBasePolicy } from '../training/base-policy';
import { parseHarnessMix } from '../training/corpus';
import { DEFAULT_PRETRAIN, pretrainBasePolicy, type PretrainProgress } from '../training/pretrain';

interface PretrainCliOptions {
  domain: string;
  seed: string;
  minutes?: string;
  steps?: string;
  preset: string;
  out?: string;
  lr: string;
  minibatch: string;
  threads?: string;
  corpusScale: string;
  mix?: string;
  init?: string;
}

function intOption(name: string, value: string, min: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  return n;
}

function numberOption(name: string, value: string): number {
  const n = Number(value);
  if (!(Number.isFinite(n) && n > 0)) throw new Error(`--${name} must be a positive number, got ${JSON.stringify(value)}`);
  return n;
}

function formatProgress(p: PretrainProgress): string {
  const of = p.plannedSteps === null ? '' : `/${p.plannedSteps}`;
  return `[pretrain] step ${p.step}${of} epoch ${p.epoch} ${p.elapsedSec.toFixed(0)}s ${(p.tokensPerSec / 1000).toFixed(1)}k tok/s lr ${p.lr.toExponential(2)} loss ${p.lossEma.toFixed(4)}\n`;
}

/** Parses the options, pretrains and writes the checkpoint and manifest; returns the manifest path. */
export async function runPretrainCommand(opts: PretrainCliOptions, argv: readonly string[] = process.argv): Promise<string> {
  if (!Object.prototype.hasOwnProperty.call(DOMAINS, opts.domain)) throw new Error(`unknown domain "${opts.domain}"; built-in domains: ${Object.keys(DOMAINS).join(', ')}`);
  if (!Object.prototype.hasOwnProperty.call(PRESETS, opts.preset)) throw new Error(`unknown preset "${opts.preset}"; presets: ${Object.keys(PRESETS).join(', ')}`);
  const domain = opts.domain as BuiltinDomainName;
  const preset = opts.preset as PresetName;
  const seed = intOption('seed', opts.seed, 0);
  const steps = opts.steps === undefined ? undefined : intOption('steps', opts.steps, 1);
  const minutes = opts.minutes === undefined ? (steps === undefined ? DEFAULT_PRETRAIN.minutes : undefined) : numberOption('minutes', opts.minutes);
  const out = opts.out ?? basePolicyPaths(domain).checkpoint;
  const lr = numberOption('lr', opts.lr);
  const minibatchSize = intOption('minibatch', opts.minibatch, 1);
  const corpusScale = intOption('corpus-scale', opts.corpusScale, 1);
  const threads = opts.threads === undefined ? undefined : intOption('threads', opts.threads, 1);
  const harnesses = opts.mix === undefined ? undefined : parseHarnessMix(domain, opts.mix);
  const init = opts.init === undefined ? undefined : decodeCheckpoint(new Uint8Array(readFileSync(opts.init)), opts.init);
  const parentPath = opts.init === undefined ? undefined : opts.init.replace(/\.ckpt$/, '') + '.json';
  const parent = parentPath !== undefined && existsSync(parentPath) ? basePolicyManifestSchema.parse(JSON.parse(readFileSync(parentPath, 'utf8'))) : undefined;
  process.stdout.write(`[pretrain] ${domain}: preset ${preset} (${countParams(modelConfig(preset))} params), seed ${seed}, ${steps ?? '-'} steps, ${minutes ?? '-'} min cap, minibatch ${minibatchSize}, peak lr ${lr}\n`);
  const result = await pretrainBasePolicy({
    ...DEFAULT_PRETRAIN, domain, seed, preset, steps, minutes, lr, minibatchSize, corpusScale, threads, harnesses, init,
    onProgress: (p) => process.stdout.write(formatProgress(p)),
  });
  const c = result.corpus;
  process.stdout.write(`[pretrain] corpus ${c.episodes} episodes, ${c.examples} examples, ${c.tokens} tokens (${c.weightedTokens} generated) built in ${result.corpusSec.toFixed(1)}s\n`);
  const common = `whale pretrain --domain ${domain} --seed ${seed} --preset ${preset} --lr ${lr} --minibatch ${minibatchSize} --corpus-scale ${corpusScale}${opts.mix === undefined ? '' : ` --mix ${opts.mix}`}${opts.init === undefined ? '' : ` --init ${opts.init}`}`;
  const manifest = writeBasePolicy(out, encodeCheckpoint(result.checkpoint), {
    domain, command: argv.length > 2 ? `whale ${argv.slice(2).join(' ')}` : common, reproduce: `${common} --steps ${result.steps}`,
    seed, preset, params: countParams(result.checkpoint.config), steps: result.steps, epochs: Number(result.epochs.toFixed(3)), minibatchSize, peakLr: lr,
    stoppedBy: result.stoppedBy, wallSeconds: Math.round(result.wallSec), trainSeconds: Math.round(result.trainSec), tokensPerSecond: Math.round(result.tokensPerSec),
    corpus: c, firstLoss: Number(result.firstLoss.toFixed(4)), finalLoss: Number(result.finalLoss.toFixed(4)), createdAt: new Date().toISOString(), parent,
  });
  process.stdout.write(`[pretrain] done: ${result.steps} steps (${result.epochs.toFixed(2)} epochs, stopped by ${result.stoppedBy}) in ${result.wallSec.toFixed(0)}s, loss ${result.firstLoss.toFixed(3)} -> ${result.finalLoss.toFixed(4)}; wrote ${out} (${manifest.bytes} bytes, sha256 ${manifest.sha256})\n`);
  return out.replace(/\.ckpt$/, '') + '.json';
}

export function registerPretrainCommand(program: Command): void {
  program
    .command('pretrain')
    .description("pretrain a domain's base policy on its teacher's demonstrations (D_weight only) and write data/base-policies/<domain>.ckpt + .json")
    .requiredOption('--domain <name>', `domain: ${Object.keys(DOMAINS).join(', ')}`)
    .option('--seed <n>', 'seed of the corpus, the initial weights and the example order', String(DEFAULT_PRETRAIN.seed))
    .option('--minutes <m>', `wall-clock budget in minutes (default ${DEFAULT_PRETRAIN.minutes} when --steps is not given)`)
    .option('--steps <n>', 'optimizer steps (deterministic; the learning-rate schedule spans them)')
    .option('--preset <name>', `model preset: ${Object.keys(PRESETS).join(', ')}`, DEFAULT_PRETRAIN.preset)
    .option('--out <file>', 'checkpoint path (default data/base-policies/<domain>.ckpt; the manifest goes beside it as .json)')
    .option('--lr <x>', 'peak learning rate', String(DEFAULT_PRETRAIN.lr))
    .option('--minibatch <n>', 'rows per optimizer step', String(DEFAULT_PRETRAIN.minibatchSize))
    .option('--corpus-scale <n>', 'demonstrations per D_weight task, multiplier of the default harness mix', String(DEFAULT_PRETRAIN.corpusScale))
    .option('--mix <spec>', 'harness mix of the corpus as label:samples-per-task, labels h0, reference, variant (default h0:2,reference:1,variant:1 times --corpus-scale)')
    .option('--init <file>', 'continue from this checkpoint (e.g. an earlier base policy) with a fresh AdamW')
    .option('--threads <n>', 'trainer intra-op threads (default 2)')
    .action(async (opts: PretrainCliOptions) => {
      await runPretrainCommand(opts);
    });
}
