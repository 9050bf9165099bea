// The Hugging Face test environment: the project-local Python (scripts/setup-hf.sh installs it), one-shot Python
// commands and a test's long-lived Python process. Tests skip, saying why, only when that environment is absent.
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

/** The test's own Python work (fixtures/py_fixture.py) in one long-lived process: it makes the tiny model and
 * recomputes step losses, importing torch and transformers once per file instead of once per job. */
export interface PyFixture {
  /** Sends one command; resolves with its answer, rejects with the Python traceback or the process's exit. */
  call<T>(command: Record<string, unknown>): Promise<T>;
  /** Closes its stdin and waits for it to exit. */
  close(): Promise<void>;
}

export function startPyFixture(env: NodeJS.ProcessEnv = process.env): PyFixture {
  const child = spawn(HF_PYTHON, [path.join(ROOT, 'tests', 'hf', 'fixtures', 'py_fixture.py')], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let buf = '';
  const waiting: { resolve: (line: string) => void; reject: (err: Error) => void }[] = [];
  let failed: Error | undefined;
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-20_000)));
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      waiting.shift()?.resolve(line);
    }
  });
  const exited = new Promise<void>((resolve) => {
    const end = (err: Error) => {
      failed ??= err;
      for (const w of waiting.splice(0)) w.reject(failed);
      resolve();
    };
    child.once('close', (code, signal) => end(new Error(`the Python fixture process exited (${signal ?? code}):\n${stderr}`)));
    child.once('error', end);
  });
  child.stdin.on('error', () => undefined);
  return {
    async call<T>(command: Record<string, unknown>): Promise<T> {
      if (failed) throw failed;
      const line = await new Promise<string>((resolve, reject) => {
        waiting.push({ resolve, reject });
        child.stdin.write(JSON.stringify(command) + '\n');
      });
      const answer = JSON.parse(line) as { ok?: T; error?: string };
      if (answer.error !== undefined) throw new Error(`the Python fixture failed ${JSON.stringify(command)}:\n${answer.error}`);
      return answer.ok as T;
    },
    async close() {
      child.stdin.end();
      await exited;
    },
  };
}
