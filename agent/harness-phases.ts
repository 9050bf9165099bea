// Runs one phase (start / parse / react) of one episode by calling the harness's hooks, or the defaults
// for hooks it leaves out, and checks every hook output against the contract schemas. Shared by the
// sandbox process (hooks live in an isolate) and the in-process runner, so both mean the same thing.

import { z } from 'zod';
import type { HarnessConfig, HarnessManifest, HarnessMessage, HookName } from './harness-contract';
import { HARNESS_LIMITS, exceedsJsonDepth, hookOutputSchemas } from './harness-contract';
import {
  defaultFeedback,
  defaultFormatObservation,
  defaultParseAction,
  defaultSetup,
  defaultShouldStop,
} from './harness-defaults';
import type { HarnessFailure, PhaseCall, PhaseResult } from './harness-runner';
import { WhaleError } from '../common/errors';

/** Calls one hook with a plain-data input; the sandbox returns its output as parsed JSON. */
export type HookCaller = (hook: HookName, input: unknown) => Promise<{ ok: true; value: unknown } | { ok: false; failure: HarnessFailure }>;

class PhaseFailure extends WhaleError {
  override readonly name = 'PhaseFailure';
  readonly fault = 'untrusted-code';
  constructor(readonly failure: HarnessFailure) {
    super(failure.reason);
  }
}

type HookOutputs = { [K in keyof typeof hookOutputSchemas]: z.infer<(typeof hookOutputSchemas)[K]> };

async function callChecked<K extends HookName>(call: HookCaller, hook: K, input: unknown): Promise<HookOutputs[K]> {
  const r = await call(hook, input);
  if (!r.ok) throw new PhaseFailure({ ...r.failure, hook });
  if (exceedsJsonDepth(r.value, HARNESS_LIMITS.maxJsonDepth)) {
    throw new PhaseFailure({ kind: 'bad-return-value', hook, reason: `${hook} returned data nested deeper than ${HARNESS_LIMITS.maxJsonDepth} levels` });
  }
  const parsed = hookOutputSchemas[hook].safeParse(r.value);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(value)'}: ${i.message}`);
    throw new PhaseFailure({ kind: 'bad-return-value', hook, reason: `${hook} returned a value outside the contract: ${issues.join('; ')}` });
  }
  return parsed.data as HookOutputs[K];
}

/** Runs a phase; `manifest.hooks` says which hooks the harness defines. */
export async function runPhase(manifest: HarnessManifest, call: HookCaller, pc: PhaseCall): Promise<PhaseResult> {
  const has = (h: HookName) => manifest.hooks.includes(h);
  const config: HarnessConfig = manifest.config;
  try {
    if (pc.phase === 'start') {
      const setup = has('setup') ? await callChecked(call, 'setup', pc.input) : defaultSetup(pc.input);
      const obsInput = { ...pc.input, state: setup.state };
      const formatted = has('formatObservation')
        ? await callChecked(call, 'formatObservation', obsInput)
        : defaultFormatObservation(config, obsInput);
      const messages: HarnessMessage[] = config.systemPrompt === '' ? [] : [{ role: 'system', content: config.systemPrompt }];
      messages.push({ role: 'user', content: formatted.text });
      return { ok: true, output: { state: formatted.state, messages } };
    }
    if (pc.phase === 'parse') {
      const out = has('parseAction') ? await callChecked(call, 'parseAction', pc.input) : defaultParseAction(pc.input);
      return { ok: true, output: out };
    }
    const fb = has('feedback') ? await callChecked(call, 'feedback', pc.input) : defaultFeedback(pc.input);
    const messages = fb.replace ?? [...pc.input.messages, ...(fb.append ?? [])];
    const chars = messages.reduce((n, m) => n + m.content.length, 0);
    if (chars > HARNESS_LIMITS.maxConversationChars || messages.length > HARNESS_LIMITS.maxMessages) {
      const reason = `feedback made the conversation ${messages.length} messages / ${chars} characters; limits ${HARNESS_LIMITS.maxMessages} / ${HARNESS_LIMITS.maxConversationChars}`;
      return { ok: false, failure: { kind: 'bad-return-value', hook: 'feedback', reason } };
    }
    const stopInput = { task: pc.input.task, state: fb.state, turn: pc.input.turn + 1, messages, observation: pc.input.observation };
    const stop = has('shouldStop') ? await callChecked(call, 'shouldStop', stopInput) : defaultShouldStop(stopInput);
    return { ok: true, output: { state: fb.state, messages, stop } };
  } catch (e) {
    if (e instanceof PhaseFailure) return { ok: false, failure: e.failure };
    throw e;
  }
}
