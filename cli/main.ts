// The `whale` command line: the registry of its commands (one file each, cli/<name>-command.ts; shared option
// helpers in cli/options.ts) and the exit codes: 0 done, 1 failed, 2 usage error.
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ROOT } from './paths';
import { UsageError } from './options';
import { registerDevCommand } from './dev-command';
import { registerDemoCommand } from './demo-command';
import { registerWorkerCommand } from './worker-command';
import { registerStartCommand } from './start-command';
import { registerRunCommand } from './run-command';
import { registerStatusCommand } from './status-command';
import { registerPretrainCommand } from './pretrain-command';
import { registerAgentCommand } from './agent-command';
import { registerDomainCommand } from './domain-command';
import { registerServeCommand } from './serve-command';
import { registerGcCommand } from './gc-command';
import { registerStopCommand } from './stop-command';
import { registerBenchCommand } from './bench-command';
import { registerHfCommands } from './hf-command';
import { registerTrackCommand } from './track-command';
import { registerAuditCommand } from './audit-command';
import { registerListCommand } from './list-command';
import { registerNamespaceCommand } from './namespace-command';

export { UsageError } from './options';

function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** Every command in the order `whale --help` and docs/reference/cli.md list them. */
const COMMANDS: ((program: Command) => void)[] = [
  registerDevCommand, registerDemoCommand, registerWorkerCommand, registerStartCommand, registerRunCommand, registerStatusCommand,
  registerPretrainCommand, registerAgentCommand, registerDomainCommand, registerServeCommand, registerGcCommand, registerStopCommand,
  registerBenchCommand, registerHfCommands, registerTrackCommand, registerAuditCommand, registerListCommand, registerNamespaceCommand,
];

export function buildProgram(): Command {
  const program = new Command('whale')
    .description('WHALE (Weight-Harness Alternating LEarning) on Temporal')
    .version(packageVersion(), '-V, --version', "print whale's version (package.json) and exit")
    // Commander's own parse errors (unknown option or command, missing argument) throw instead of exiting
    // with 1, so main() can exit 2 as for every usage error; set before the commands, which inherit it.
    .exitOverride()
    .showHelpAfterError();
  for (const register of COMMANDS) register(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
    process.exit(process.exitCode ?? 0);
  } catch (err) {
    // Commander has printed its message (and the help) already: --help and --version exit 0, a parse error 2.
    if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
    const e = err as Error;
    process.stderr.write(`whale: ${e.message}\n`);
    process.exit(e instanceof UsageError ? 2 : 1);
  }
}
