// `whale export` (a checkpoint as a Hugging Face folder for transformers/vLLM/TRL, or as the transformers.js ONNX
// folder) and `whale import` (such a GPT-2 folder back into a WHALE checkpoint file or the artifact store).
import type { Command } from 'commander';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { decodeCheckpoint, encodeCheckpoint, exportForTransformersJs } from '../model';
import { exportHfFolder, importHfFolder } from '../model/hf-folder';
import { DirectoryArtifactStore, writeFileAtomic } from '../store/artifact-store';

const FORMATS = ['hf', 'onnx'] as const;

async function readCheckpointFile(file: string) {
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(file);
  } catch (err) {
    throw new Error(`cannot read checkpoint ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  return decodeCheckpoint(bytes, `checkpoint ${file}`);
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
    .description('import a Hugging Face GPT-2 folder with the project\'s byte vocabulary (as `whale export --format hf` or the reference trainer writes it) as a WHALE checkpoint')
    .argument('<folder>', 'the Hugging Face model folder')
    .option('--out <file>', 'the checkpoint file to write (default: <folder>.ckpt)')
    .option('--store <dir>', 'also put it into this artifact store and print its reference')
    .action(async (folder: string, o: { out?: string; store?: string }) => {
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
