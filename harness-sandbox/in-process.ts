// Runs a harness UNSANDBOXED in the calling process: same compile step, same helpers, same phase code,
// hooks called directly. Only for trusted harnesses in benchmarks (scripts/bench-sandbox.ts measures the
// sandbox's overhead against it) and tests. Never use it for proposer-written candidates.

import type { HarnessManifest, HarnessViolation, HookName } from '../agent/harness-contract';
import { HOOK_NAMES, checkHarnessConfig, harnessConfigSchema } from '../agent/harness-contract';
import type { HarnessRunner } from '../agent/harness-runner';
import { runPhase } from '../agent/harness-phases';
import { compileHarness } from './compile';
import { HELPERS_MODULE_JS } from './helpers-source';

type HookFn = (input: unknown) => unknown;

export function loadHarnessInProcess(source: string): { ok: true; runner: HarnessRunner } | { ok: false; violations: HarnessViolation[] } {
  const compiled = compileHarness(source);
  if (compiled.violations.length > 0) return { ok: false, violations: compiled.violations };
  const helpers: unknown = new Function(`return ${HELPERS_MODULE_JS}`)();
  const requireShim = (name: string) => {
    if (name === 'whale:helpers') return helpers;
    throw new Error(`require("${name}") is not allowed in a harness`);
  };
  const module: { exports: Record<string, unknown> } = { exports: {} };
  new Function('exports', 'require', 'module', compiled.code)(module.exports, requireShim, module);
  const def = module.exports.default as Record<string, unknown> | undefined;
  if (!def || typeof def !== 'object') return { ok: false, violations: [{ where: 'load', message: 'the module must `export default` a harness object' }] };
  const { hooks: rawHooks, ...config } = def;
  const hooks = (rawHooks ?? {}) as Record<string, HookFn>;
  const violations = checkHarnessConfig(config);
  if (violations.length > 0) return { ok: false, violations };
  const manifest: HarnessManifest = {
    harnessId: compiled.harnessId,
    config: harnessConfigSchema.parse(config),
    hooks: Object.keys(hooks).filter((h): h is HookName => (HOOK_NAMES as readonly string[]).includes(h)),
  };
  const caller = async (hook: HookName, input: unknown) => {
    try {
      // A copy in, as in the sandbox: a hook that mutates its input must not reach into the loop's state.
      return { ok: true as const, value: hooks[hook](structuredClone(input)) };
    } catch (e) {
      return { ok: false as const, failure: { kind: 'runtime-error' as const, reason: e instanceof Error ? e.message : String(e) } };
    }
  };
  return { ok: true, runner: { manifest, runPhases: (calls) => Promise.all(calls.map((c) => runPhase(manifest, caller, c))) } };
}
