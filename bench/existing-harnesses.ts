// Every harness the project itself ships or writes, per built-in domain: h0, the reference harness, each
// catalogue mechanism applied to h0 (two variants), each applied again to the resampling forced-first-tool
// candidate (stacked hooks), and crossovers. scripts/reward-attacks.ts --existing scores them on the base
// policies, so a change to the reward rules can show that honest harnesses keep their scores.
import { mechanismEnv } from '../activities/proposers/builtin';
import { applyEdits, parseHarnessSource, readLiteralConfig } from '../activities/proposers/harness-source';
import { readHooks } from '../activities/proposers/hook-templates';
import { MECHANISMS, type ParentHarness } from '../activities/proposers/mechanisms';
import type { DomainEnvironment, EnvTask } from '../agent/environment';
import { readSeedHarness } from '../domains/harnesses';
import { readReferenceHarness } from '../domains/reference-harnesses';
import type { BuiltinDomainName } from '../domains/registry';

export interface NamedHarness {
  name: string;
  source: string;
}

function parent(name: string, source: string): ParentHarness {
  const info = parseHarnessSource(source);
  if (!info) throw new Error(`${name}: the proposer cannot read this harness`);
  return { name, source, info, config: readLiteralConfig(info), hooks: readHooks(info), stats: null, successRate: 0, meanTurns: 0 };
}

export function existingHarnesses(domain: BuiltinDomainName, env: DomainEnvironment<unknown>, tasks: readonly EnvTask<unknown>[]): NamedHarness[] {
  const menv = mechanismEnv({
    tools: env.tools, answerKind: env.answerKind, promptOnly: false,
    sampleViews: tasks.slice(0, 16).map((t) => ({ question: t.question, view: t.view, observation: env.observe(t, env.initialState(t)) })),
  });
  const out: NamedHarness[] = [{ name: 'h0', source: readSeedHarness(domain) }, { name: 'reference', source: readReferenceHarness(domain) }];
  const seen = new Set(out.map((h) => h.source));
  const add = (name: string, source: string) => {
    if (seen.has(source)) return;
    seen.add(source);
    out.push({ name, source });
  };
  const h0 = parent('h0', readSeedHarness(domain));
  const apply = (p: ParentHarness, prefix: string, partner: ParentHarness | null) => {
    for (const m of MECHANISMS) {
      for (const variant of [0, 1]) {
        const t = m.apply(p, menv, variant, partner);
        if (t) add(`${prefix}${m.id}/${variant}`, applyEdits(p.source, t.edits));
      }
    }
  };
  apply(h0, '', null);
  const resampling = out.find((h) => h.name === 'forced-first-tool/1');
  const called = out.find((h) => h.name === 'forced-first-tool/0');
  if (resampling) apply(parent('resampling', resampling.source), 'resampling+', called ? parent('called', called.source) : null);
  const nudged = out.find((h) => h.name === 'feedback-nudge/0');
  if (nudged && resampling) {
    const t = MECHANISMS.find((m) => m.id === 'crossover')!.apply(parent('nudged', nudged.source), menv, 1, parent('resampling', resampling.source));
    if (t) add('crossover(nudge x resampling)', applyEdits(nudged.source, t.edits));
  }
  return out;
}
