// `whale domain check <folder>`: loads a user's domain folder the way the workers will, validates its module
// and tasks, and prints its name, content hash, pinned reference, split sizes and tools (no server needed).
import type { Command } from 'commander';
import * as path from 'node:path';
import { DomainModuleError, loadDomainModule } from '../domains/external';
import { SandboxPool } from '../harness-sandbox/pool';
import { printJson } from './options';

export function registerDomainCommand(program: Command): void {
  const domain = program.command('domain').description('bring your own domain: check a domain folder (docs/bring-your-own-domain.md)');
  domain
    .command('check')
    .description('load and validate a domain folder; print its content hash, pinned reference, splits and tools')
    .argument('<folder>', 'the domain folder (its index.ts exports a DomainModule)')
    .option('--json', 'print what was checked as one JSON document (a folder that does not load still exits 2 with the message on stderr)')
    .action(async (folder: string, opts: { json?: boolean }) => {
      let m;
      try {
        m = loadDomainModule(path.resolve(folder));
        m.instance();
      } catch (err) {
        if (!(err instanceof DomainModuleError)) throw err;
        process.stderr.write(`whale: ${err.message}\n`);
        process.exit(2);
      }
      const inst = m.instance();
      const pool = new SandboxPool({ processes: 1 });
      try {
        const h0 = await pool.loadHarness(m.seedHarnessSource());
        const s = inst.splits;
        const basePolicy = 'builtin' in m.module.basePolicy ? { builtin: m.module.basePolicy.builtin } : { path: path.relative(m.dir, m.basePolicyPath ?? '') };
        if (opts.json) {
          printJson({
            name: m.module.name, description: m.module.description, folder: m.dir, sha256: m.sha256, ref: m.ref,
            splits: { weight: s.weight.length, harness: s.harness.length, test: s.test.length },
            tools: inst.environment.tools.map((t) => t.name), answerKind: inst.environment.answerKind,
            seedHarness: { path: path.relative(m.dir, m.seedHarnessPath), loads: h0.ok, ...(h0.ok ? { name: h0.runner.manifest.config.name } : { failure: h0.failure }) },
            basePolicy,
          });
        } else process.stdout.write(
          `domain ${m.module.name}: ${m.module.description}\n` +
            `  folder ${m.dir}\n  sha256 ${m.sha256}\n  ref    ${m.ref}\n` +
            `  splits D_weight ${s.weight.length}, D_harness ${s.harness.length}, D_test ${s.test.length} (e.g. ${s.test.slice(0, 2).map((t) => t.id).join(', ')})\n` +
            `  tools  ${inst.environment.tools.map((t) => t.name).join(', ') || '(none)'}; answer kind ${inst.environment.answerKind}\n` +
            `  seed harness ${path.relative(m.dir, m.seedHarnessPath)}: ${h0.ok ? `loads (${h0.runner.manifest.config.name})` : `DOES NOT LOAD: ${h0.failure.kind}: ${h0.failure.reason}`}\n` +
            `  base policy ${'builtin' in basePolicy ? `the built-in ${basePolicy.builtin} base policy` : basePolicy.path}\n`,
        );
        if (!h0.ok) process.exitCode = 2;
      } finally {
        await pool.close();
      }
    });
}
