// `whale dev`: the Temporal dev server from the project-local CLI, with its SQLite database in a project
// data folder (state survives restarts), the project's search attributes, a long namespace retention,
// and the workers as child processes; Ctrl-C stops everything cleanly.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync } from 'node:fs';
import * as path from 'node:path';
import type { TemporalConfig } from '../temporal.config';
import { searchAttributeFlags } from '../workflows/search-attributes';
import { PROJECT_ROOT } from './paths';

export function temporalCliPath(): string {
  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const local = path.join(PROJECT_ROOT, '.tools', 'bin', 'temporal');
  if (existsSync(local)) return local;
  throw new Error('the temporal CLI is not installed in this project: run `bash scripts/setup.sh` (it installs it into .tools/bin)');
}

export interface DevServerOptions {
  config: TemporalConfig;
  headless?: boolean;
  /** Server output goes to <dataDir>/server.log instead of the terminal. */
  quiet?: boolean;
  /** Extra `--dynamic-config-value` entries, e.g. for tests. */
  dynamicConfig?: string[];
}

/** Starts the dev server as a child process and resolves once it answers; the caller stops it. */
export async function startDevServer(opts: DevServerOptions): Promise<ChildProcess> {
  const { config } = opts;
  const cli = temporalCliPath();
  const dataDir = path.resolve(PROJECT_ROOT, config.devServer.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const args = [
    'server', 'start-dev',
    '--db-filename', path.join(dataDir, 'whale.db'),
    '--ip', config.devServer.ip,
    '--port', String(config.devServer.port),
    '--namespace', config.namespace,
    '--log-level', 'warn',
    ...(opts.headless ? ['--headless'] : ['--ui-port', String(config.devServer.uiPort)]),
    ...searchAttributeFlags().flatMap((f) => ['--search-attribute', f]),
    ...(opts.dynamicConfig ?? []).flatMap((d) => ['--dynamic-config-value', d]),
  ];
  if (serverAnswers(config)) {
    throw new Error(`a Temporal server already answers at ${config.address}: stop it first (is another \`whale dev\` running?), or set WHALE_DEV_PORT and WHALE_TEMPORAL_ADDRESS to use another port`);
  }
  const logFd = opts.quiet ? openSync(path.join(dataDir, 'server.log'), 'a') : null;
  const child = spawn(cli, args, { stdio: logFd === null ? ['ignore', 'inherit', 'inherit'] : ['ignore', logFd, logFd] });
  let exitedEarly: ((err: Error) => void) | null = null;
  const exited = new Promise<never>((_, reject) => (exitedEarly = reject));
  exited.catch(() => undefined);
  const onEarlyExit = (code: number | null) => exitedEarly?.(new Error(`the dev server exited (code ${code}) before it was ready; is port ${config.devServer.port} or ${config.devServer.uiPort} taken? Set WHALE_DEV_PORT / WHALE_DEV_UI_PORT.`));
  child.once('exit', onEarlyExit);
  await Promise.race([waitForServer(config, 60_000), exited]);
  child.off('exit', onEarlyExit);
  setRetention(config);
  return child;
}

/** One health probe: true when a server answers at the configured address. */
export function serverAnswers(config: TemporalConfig): boolean {
  const r = spawnSync(temporalCliPath(), ['operator', 'cluster', 'health', '--address', config.address, '--command-timeout', '2s'], { encoding: 'utf8' });
  return r.status === 0 && /SERVING/.test(r.stdout);
}

/** Polls the server's health with the CLI until it answers or the deadline passes. */
export async function waitForServer(config: TemporalConfig, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (serverAnswers(config)) return;
    if (Date.now() > deadline) throw new Error(`the Temporal server at ${config.address} did not become healthy within ${timeoutMs / 1000}s`);
    await new Promise((res) => setTimeout(res, 250));
  }
}

/** Dev-server namespaces keep closed runs 24 h; audits of multi-day runs need longer. */
export function setRetention(config: TemporalConfig): void {
  const r = spawnSync(temporalCliPath(), [
    'operator', 'namespace', 'update', '--address', config.address, '--namespace', config.namespace, '--retention', config.devServer.retention,
  ], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`could not set retention ${config.devServer.retention} on namespace ${config.namespace}: ${r.stderr.trim()}`);
}

/** Sends SIGTERM, waits up to `graceMs`, then SIGKILL. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((res) => child.once('exit', () => res()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await done;
  clearTimeout(timer);
}
