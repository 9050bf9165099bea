// The Hugging Face test environment: the project-local Python (scripts/setup-hf.sh installs it) and a helper
// that runs a Python command to completion. Tests skip, saying why, only when that environment is absent.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from '../workflows/env';

export const HF_PYTHON = path.join(ROOT, '.tools', 'hf-venv', 'bin', 'python');
export const TRAINER = path.join(ROOT, 'trainers', 'hf', 'train.py');
/** Written by scripts/setup-hf.sh only after a complete install (a half-installed environment counts as absent). */
const STAMP = path.join(ROOT, '.tools', 'hf-venv', '.whale-hf-stamp');

/** False when the environment is present; otherwise the reason the tests skip (printed once). */
export function hfSkipReason(): string | false {
  if (existsSync(HF_PYTHON) && existsSync(STAMP)) return false;
  const why = 'the Hugging Face environment .tools/hf-venv is absent (run `bash scripts/setup-hf.sh`, about 5 GB)';
  process.stdout.write(`[hf] skipping: ${why}\n`);
  return why;
}

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs argv with optional stdin; resolves when it exits (never rejects on a non-zero status). */
export function run(argv: string[], input?: string, env: NodeJS.ProcessEnv = process.env): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(input ?? '');
  });
}
