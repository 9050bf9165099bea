// `whale export` (a checkpoint as a Hugging Face folder for transformers/vLLM/TRL, or as the transformers.js ONNX
// folder) and `whale import` (such a GPT-2 folder back into a WHALE checkpoint file or the artifact store, or
// any model folder as a checkpoint pointer a run starts from).
import type { Command } from 'commander';
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { decodeCheckpoint, encodeCheckpoint, exportForTransformersJs } from '../model';
import { exportHfFolder, importHfFolder } from '../model/checkpoints/hf-folder';
import { DirectoryArtifactStore, writeFileAtomic, type ArtifactStore } from '../store/artifact-store';
import type { ArtifactRef } from '../store/artifact-ref';
import { putCheckpointPointer } from '../backends/checkpoint-pointer';

const FORMATS = ['hf', 'onnx'] as const;

/** Stores a checkpoint pointer to a Hugging Face folder (its served name: the absolute path unless given). */
export async function storeHfPointer(store: ArtifactStore, folder: string, model?: string): Promise<ArtifactRef> {
  const abs = path.resolve(folder);
  if (!existsSync(path.join(abs, 'config.json'))) throw new Error(`${folder} is not a Hugging Face model folder (no config.json)`);
  return putCheckpointPointer(store, { whaleCheckpointPointer: 1, model: model ?? abs, uri: `file://${abs}` });
}

async function readCheckpointFile(file: string) {
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(file);
  } catch (err) {
    throw new Error(`cannot read checkpoint ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  return decodeCheckpoint(bytes, `checkpoint ${file}`);
}

/** A run config file as a JSON object (the fields are checked when the run starts). */
async function readRunConfigObject(file: string): Promise<Record<string, unknown>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`--run-config ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message} (give a run config JSON file, e.g. a copy of trainers/hf/math-journey.json)`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`--run-config ${file}: a run config is a JSON object such as {"version": 1, "method": "whale-fixed", "domain": "math"}`);
  return parsed as Record<string, unknown>;
}

export function registerHfCommands(program: Command): void {
  program
    .command('export')
    .description('export a checkpoint file as a Hugging Face folder (--format hf: safetensors, GPT-2 config, tokenizer, chat template) or a transformers.js ONNX folder (--format onnx)')
    .argument('<checkpoint>', 'a WHALE checkpoint file (e.g. data/base-policies/math.ckpt)')
    .requiredOption('--out <dir>', 'the folder to write (created; files in it are replaced)')
    .option('--format <format>', `one of ${FORMATS.join(', ')}`, 'hf')
    .action(async (file: string, o: { out: string; format: string }) => {
      if (!(FORMATS as readonly string[]).includes(o.format)) throw new Error(`--format ${o.format} is not known: use one of ${FORMATS.join(', ')}`);
      const ck = await readCheckpointFile(file);
      const written = o.format === 'hf' ? await exportHfFolder(ck, o.out) : await exportForTransformersJs(ck, o.out);
      process.stdout.write(`exported ${file} (${o.format}) to ${o.out}: ${written.map((p) => path.relative(o.out, p)).join(', ')}\n`);
    });

  program
    .command('import')
    .description('import a Hugging Face GPT-2 folder with the project\'s byte vocabulary (as `whale export --format hf` or the reference trainer writes it) as a WHALE checkpoint; or, with --pointer, any model folder as a checkpoint pointer a run can start from')
    .argument('<folder>', 'the Hugging Face model folder')
    .option('--out <file>', 'the checkpoint file to write (default: <folder>.ckpt)')
    .option('--store <dir>', 'also put it into this artifact store and print its reference')
    .option('--pointer', 'with --store: store a pointer to the folder (served by an OpenAI-compatible server, trained by an external trainer) instead of converting it')
    .option('--model <name>', 'with --pointer: the name the server serves it under (default: the folder\'s absolute path, as `transformers serve` names local folders)')
    .option('--run-config <file>', 'with --pointer: also write the reference into this run config JSON file as model.baseCheckpoint')
    .action(async (folder: string, o: { out?: string; store?: string; pointer?: boolean; model?: string; runConfig?: string }) => {
      if (o.runConfig && !o.pointer) throw new Error('--run-config goes with --pointer (a converted checkpoint file is not a served model)');
      if (o.pointer) {
        if (!o.store) throw new Error('--pointer needs --store <artifact dir>: the pointer is an artifact of that store');
        // Read the run config first: a file that is not a JSON object leaves nothing in the store.
        const config = o.runConfig ? await readRunConfigObject(o.runConfig) : null;
        const ref = await storeHfPointer(new DirectoryArtifactStore(o.store), folder, o.model);
        process.stdout.write(`${JSON.stringify(ref)}\n`);
        if (o.runConfig && config) {
          const model = typeof config.model === 'object' && config.model !== null && !Array.isArray(config.model) ? config.model as Record<string, unknown> : {};
          config.model = { ...model, baseCheckpoint: ref };
          await writeFileAtomic(o.runConfig, `${JSON.stringify(config, null, 2)}\n`);
          process.stdout.write(`wrote it to ${o.runConfig} as model.baseCheckpoint\n`);
        }
        return;
      }
      const ck = await importHfFolder(folder);
      const bytes = encodeCheckpoint(ck);
      const out = o.out ?? `${folder.replace(/[\\/]+$/, '')}.ckpt`;
      await writeFileAtomic(out, bytes);
      process.stdout.write(`imported ${folder} to ${out} (${ck.params.length} parameters; AdamW moments start fresh)\n`);
      if (o.store) {
        const ref = await new DirectoryArtifactStore(o.store).put('checkpoint', bytes);
        process.stdout.write(`${JSON.stringify(ref)}\n`);
      }
    });
}
