// The chess harness lever, measured: mean@8 of a checkpoint (the committed chess base by default) under h0,
// the reference harness and every catalogue mechanism applied to h0 (bench/existing-harnesses.ts), on
// D_harness (where a harness search would choose) and on D_test; writes reports/headroom-runs/chess-harnesses.json.
//   node --import tsx domains/chess/score-harnesses.ts [--split harness|test] [--tasks 128] [--only h0,reference] [--ckpt file]
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { existingHarnesses } from '../../bench/existing-harnesses';
import { decodeCheckpoint } from '../../model';
import { loadBasePolicy } from '../../training/base-policy';
import { evaluateMeanAt8, type EvalResult } from '../../training/headroom';
import { getDomain } from '../registry';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      split: { type: 'string', default: 'test' },
      tasks: { type: 'string', default: '128' },
      only: { type: 'string' },
      ckpt: { type: 'string' },
      seed: { type: 'string', default: '1' },
      out: { type: 'string', default: join(__dirname, '..', '..', 'reports', 'headroom-runs', 'chess-harnesses.json') },
    },
  });
  const split = values.split;
  if (split !== 'harness' && split !== 'test') throw new Error(`--split must be harness or test, got ${JSON.stringify(split)}`);
  const n = Number(values.tasks);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--tasks must be an integer >= 1, got ${JSON.stringify(values.tasks)}`);
  const instance = getDomain('chess').load({ kind: 'synthetic' });
  const bytes = values.ckpt === undefined ? loadBasePolicy('chess').bytes : new Uint8Array(readFileSync(values.ckpt));
  const ck = decodeCheckpoint(bytes, values.ckpt ?? 'chess base');
  const tasks = instance.splits[split].slice(0, n);
  const only = values.only?.split(',');
  const harnesses = existingHarnesses('chess', instance.environment, instance.splits.harness).filter((h) => !only || only.includes(h.name));
  if (harnesses.length === 0) throw new Error(`--only ${values.only} names no harness; try h0,reference`);
  const rows: Array<{ name: string } & EvalResult> = [];
  for (const h of harnesses) {
    const r = await evaluateMeanAt8(ck, instance, h.source, tasks, Number(values.seed));
    rows.push({ name: h.name, ...r });
    process.stdout.write(`${h.name}: mean@8 ${(100 * r.meanAt8).toFixed(1)}% pass@8 ${(100 * r.passAt8).toFixed(1)}% answered ${(100 * r.answerRate).toFixed(0)}% (${r.seconds.toFixed(0)} s)\n`);
  }
  const command = `node --import tsx domains/chess/score-harnesses.ts ${process.argv.slice(2).join(' ')}`.trim();
  writeFileSync(values.out, JSON.stringify({ split, tasks: tasks.length, checkpoint: values.ckpt ?? 'data/base-policies/chess.ckpt', measuredAt: new Date().toISOString(), command, rows }, null, 1) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
