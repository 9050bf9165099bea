// What the CLI's commands share: the usage error (exit 2), run-config reading, the options of `start` and
// `run`, `--json` output, and a client from the configured connection.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { WhaleError } from '../common/errors';

/** A user error: printed without a stack, exit code 2. */
export class UsageError extends WhaleError {
  override name = 'UsageError';
  readonly fault = 'user-input';
}

/** Runs `fn`, turning any error it throws into a UsageError (for checks that throw plain errors on bad input). */
export function asUsage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw err instanceof UsageError ? err : new UsageError((err as Error).message);
  }
}

export function readRunConfig(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read run config ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`run config ${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/** The options `whale start` and `whale run` share: where the config comes from and what it is branched off. */
export function addRunStartOptions(command: Command): Command {
  return command
    .argument('[config]', 'run config JSON file')
    .option('--preset <name>', 'a preset from presets/ instead of a file')
    .option('--id <workflowId>', 'workflow id (default: whale-<method>-<domain>-<time>)')
    .option('--seed <n>', "the run seed (overrides the config's seed)")
    .option('--domain <name|folder>', "the domain: a built-in name or your domain folder (overrides the config's; docs/bring-your-own-domain.md)")
    .option('--from <run|bundle>', "start from another run's checkpoint and harness, or an exported agent bundle folder (docs/agent-bundle.md)")
    .option('--from-which <final|best>', "with --from <run>: the parent's final (default) or best evaluated checkpoint and harness")
    .option('--trust-bundle-code', "with --from <bundle> that brings its own domain folder: run that code (here and on the workers); refused without it");
}

/** Prints one JSON document on stdout (what every `--json` prints: nothing else goes to stdout). */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** A client on the configured server and namespace (temporal.config.ts: profile, TEMPORAL_*, WHALE_*). */
// Loaded here, not at the top: every command imports this file, also for `--help`, which needs neither.
export async function configuredClient(): Promise<Client> {
  const { loadTemporalConfig } = require('../temporal.config') as typeof import('../temporal.config');
  const { connectClient } = require('../workers/connection') as typeof import('../workers/connection');
  return connectClient(loadTemporalConfig());
}
