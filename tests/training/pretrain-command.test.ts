// `whale pretrain` as registered on a commander program: its options, and clear errors for bad input.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Command } from 'commander';
import { registerPretrainCommand } from '../../cli/pretrain-command';

function program(): Command {
  const p = new Command('whale').exitOverride();
  registerPretrainCommand(p);
  return p;
}

void test('whale pretrain is registered with the documented options', () => {
  const cmd = program().commands.find((c) => c.name() === 'pretrain');
  assert.ok(cmd);
  const flags = cmd.options.map((o) => o.long);
  for (const f of ['--domain', '--seed', '--minutes', '--steps', '--preset', '--out', '--mix', '--init']) assert.ok(flags.includes(f), `missing ${f}`);
});

void test('bad input fails with a message that says what to fix', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'whale-pretrain-'));
  const run = (args: string[]) => program().parseAsync(['node', 'whale', 'pretrain', ...args, '--out', join(dir, 'x.ckpt')]);
  try {
    await assert.rejects(run(['--domain', 'poker']), /unknown domain "poker"; built-in domains: search-qa, math, chess/);
    await assert.rejects(run(['--domain', 'math', '--preset', 'huge']), /unknown preset "huge"/);
    await assert.rejects(run(['--domain', 'math', '--steps', '0']), /--steps must be an integer >= 1/);
    await assert.rejects(run(['--domain', 'math', '--mix', 'h0:x']), /bad harness mix entry/);
    // The tiny preset's 64-token context holds no math episode.
    await assert.rejects(run(['--domain', 'math', '--preset', 'tiny', '--steps', '1', '--mix', 'h0:1']), /does not fit the model context 64/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
