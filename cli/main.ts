// The `whale` command line: the registry of its commands (one file each, cli/<name>-command.ts; shared option
// helpers in cli/options.ts) and the exit codes: 0 done, 1 failed, 2 usage error.
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ROOT } from './paths';
import { UsageError } from './options';
export { UsageError } from './options';

function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

type Register = (program: Command) => void;
/**
 * Every command in the order `whale --help` and docs/reference/cli.md list them, each with the names it registers
 * and a loader. Loading only the command being run keeps a short command (`whale status`, `whale --version`) from
 * paying for every other command's imports (the model runtime, the bench, the audit); `require`, not `import()`:
 * bin/whale.js registers tsx's CommonJS hook only.
 */
const COMMANDS: { names: string[]; load: () => Register }[] = [
  { names: ['dev'], load: () => (require('./dev-command') as typeof import('./dev-command')).registerDevCommand },
  { names: ['demo'], load: () => (require('./demo-command') as typeof import('./demo-command')).registerDemoCommand },
  { names: ['worker'], load: () => (require('./worker-command') as typeof import('./worker-command')).registerWorkerCommand },
  { names: ['start'], load: () => (require('./start-command') as typeof import('./start-command')).registerStartCommand },
  { names: ['run'], load: () => (require('./run-command') as typeof import('./run-command')).registerRunCommand },
  { names: ['status'], load: () => (require('./status-command') as typeof import('./status-command')).registerStatusCommand },
  { names: ['pretrain'], load: () => (require('./pretrain-command') as typeof import('./pretrain-command')).registerPretrainCommand },
  { names: ['agent'], load: () => (require('./agent-command') as typeof import('./agent-command')).registerAgentCommand },
  { names: ['domain'], load: () => (require('./domain-command') as typeof import('./domain-command')).registerDomainCommand },
  { names: ['train-external', 'serve'], load: () => (require('./serve-command') as typeof import('./serve-command')).registerServeCommand },
  { names: ['gc'], load: () => (require('./gc-command') as typeof import('./gc-command')).registerGcCommand },
  { names: ['stop'], load: () => (require('./stop-command') as typeof import('./stop-command')).registerStopCommand },
  { names: ['bench'], load: () => (require('./bench-command') as typeof import('./bench-command')).registerBenchCommand },
  { names: ['export', 'import'], load: () => (require('./hf-command') as typeof import('./hf-command')).registerHfCommands },
  { names: ['track'], load: () => (require('./track-command') as typeof import('./track-command')).registerTrackCommand },
  { names: ['audit'], load: () => (require('./audit-command') as typeof import('./audit-command')).registerAuditCommand },
  { names: ['list'], load: () => (require('./list-command') as typeof import('./list-command')).registerListCommand },
  { names: ['namespace'], load: () => (require('./namespace-command') as typeof import('./namespace-command')).registerNamespaceCommand },
];

/**
 * The program with every command, or, given the arguments, with only the command they name: the first argument
 * when it is a known command name. Anything else (no command, an option first, `help`, an unknown name) gets every
 * command, so help lists them all and an unknown command is reported as before.
 */
export function buildProgram(argv?: string[]): Command {
  const program = new Command('whale')
    .description('WHALE (Weight-Harness Alternating LEarning) on Temporal')
    .version(packageVersion(), '-V, --version', "print whale's version (package.json) and exit")
    // Commander's own parse errors (unknown option or command, missing argument) throw instead of exiting
    // with 1, so main() can exit 2 as for every usage error; set before the commands, which inherit it.
    .exitOverride()
    .showHelpAfterError();
  const first = argv?.[2];
  // `whale --version` needs no command at all.
  const wanted = first === '-V' || first === '--version' ? []
    : COMMANDS.filter((c) => first !== undefined && c.names.includes(first));
  for (const c of wanted.length > 0 || first === '-V' || first === '--version' ? wanted : COMMANDS) c.load()(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram(argv).parseAsync(argv);
    process.exit(process.exitCode ?? 0);
  } catch (err) {
    // Commander has printed its message (and the help) already: --help and --version exit 0, a parse error 2.
    if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
    const e = err as Error;
    process.stderr.write(`whale: ${e.message}\n`);
    process.exit(e instanceof UsageError ? 2 : 1);
  }
}
