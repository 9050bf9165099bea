// The tuned agent as a self-contained folder: the run's final (or best) checkpoint, the harness source that
// was accepted with it, the domain's identity and tools (and, for a user's domain folder, a copy of it), and
// a manifest with the run id, scores and hashes. `whale agent run` loads it with no server: the same agent
// loop (agent/loop.ts) with the sampling settings and seed derivation of the run's test evaluation. The
// weights also travel as a Hugging Face folder (hf/): the export of the project's model, or, for a run on a
// served model (a checkpoint pointer), a copy of the folder the pointer names, then the only weights.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { ArtifactRef } from '../store/artifact-ref';
import { sha256Hex, type ArtifactStore } from '../store/artifact-store';
import type { RunConfig } from '../workflows/run-config';
import { domainFiles, formatDomainRef, hashDomainFolder, loadDomainModule, parseDomainRef } from '../domains/external';
import { getDomain } from '../domains/registry';
import type { DomainInstance, EnvTask } from '../domains/types';
import type { OrtSampler } from '../model';
import type { LoadHarnessResult, SandboxPool } from '../harness-sandbox/pool';
import type { Trajectory } from '../agent/trajectory';
import { AgentBundleError, bundleDomain, checkBuiltinDomain, checkCodeIsHashed, type BundleCodeTrust } from './bundle-code';

export { AgentBundleError, bundleDomain, type BundleCodeTrust } from './bundle-code';

export const BUNDLE_VERSION = 1;
const Sha = z.string().regex(/^[0-9a-f]{64}$/);
const Score = z.number().nullable();

export const BundleManifestSchema = z.strictObject({
  bundleVersion: z.literal(BUNDLE_VERSION),
  /** The workflow id of the run the agent comes from. */
  runId: z.string(),
  which: z.enum(['final', 'best']),
  exportedAt: z.string(),
  domain: z.strictObject({
    /** Registry name, or the module's name for a domain folder. */
    name: z.string(),
    /** The run's `domain` value (a registry name or a pinned file:// reference). */
    ref: z.string(),
    /** 'folder': a copy of the domain folder is in `domain/` with the same content hash. */
    kind: z.enum(['builtin', 'folder']),
    sha256: Sha.nullable(),
    answerKind: z.enum(['answer', 'move']),
    /** The tools the model may call, as the agent loop offers them (names, descriptions, parameters). */
    tools: z.array(z.unknown()),
  }),
  /** The project checkpoint; null for a run on a served model, whose weights are only in hf/. */
  checkpoint: z.strictObject({ file: z.literal('checkpoint.ckpt'), sha256: Sha, bytes: z.number().int() }).nullable(),
  /**
   * The weights as a Hugging Face folder (transformers, vLLM, TRL load it): `export` of the checkpoint, or a
   * copy of a checkpoint pointer's folder (`pointer`, `model`: the name it was served under). Absent in
   * bundles written before it existed.
   */
  hf: z.strictObject({ dir: z.literal('hf'), source: z.enum(['export', 'pointer']), model: z.string().nullable(), files: z.record(z.string(), Sha) }).optional(),
  harness: z.strictObject({ file: z.literal('harness.ts'), sha256: Sha, bytes: z.number().int(), name: z.string() }),
  scores: z.strictObject({
    initialMeanAt8: Score, bestMeanAt8: Score, finalMeanAt8: Score,
    /** D_test mean@8 of exactly this checkpoint-harness pair in the run, and the evaluation's label. */
    exportedMeanAt8: Score, exportedLabel: z.string().nullable(),
    testTaskLimit: z.number().int().nullable(), testSamplesPerTask: z.number().int(),
  }),
  run: z.strictObject({ method: z.string(), seed: z.number().int(), modelPreset: z.string() }),
  /** How the run's test evaluation sampled (the defaults of `whale agent run`). */
  sampling: z.strictObject({ temperature: z.number(), topK: z.number().int(), topP: z.number(), maxNewTokensPerTurn: z.number().int(), maxEpisodeTokens: z.number().int(), step: z.number().int() }),
});
export type BundleManifest = z.infer<typeof BundleManifestSchema>;

export interface EvaluatedPair {
  checkpoint: ArtifactRef;
  harness: ArtifactRef;
  harnessName: string;
  meanAt8: number | null;
  label: string | null;
}

/** What a run's history says about its outcome: config, scores, and its final and best evaluated pairs. */
export interface RunOutcome {
  runId: string;
  status: string;
  config: RunConfig;
  initialMeanAt8: number | null;
  bestMeanAt8: number | null;
  finalMeanAt8: number | null;
  final: EvaluatedPair | null;
  best: EvaluatedPair | null;
}

function decodePayload(p: { payloads?: { data?: Uint8Array | null }[] | null } | null | undefined): unknown {
  const data = p?.payloads?.[0]?.data;
  return data ? JSON.parse(Buffer.from(data).toString('utf8')) : undefined;
}

/** Reads a run's outcome from its history (every run of its continue-as-new chain); needs the server. */
export async function readRunOutcome(client: Client, runId: string): Promise<RunOutcome> {
  // Loaded here and in exportBundle and runBundleTask, not at the top: `whale agent run` needs none of the
  // export's modules, and a refused bundle none of the sampler's (each costs a short command its start-up).
  const { buildTimeline, fetchHistories } = require('../audit/timeline') as typeof import('../audit/timeline');
  const histories = await fetchHistories(client, runId);
  const t = buildTimeline(runId, histories);
  if (!t.config) throw new AgentBundleError(`run ${runId} has no valid run config in its history (it failed at start: ${t.failure ?? 'unknown'})`);
  const evals: EvaluatedPair[] = [];
  for (const h of histories) {
    const scheduled = new Map<string, { type: string; input: unknown }>();
    for (const e of h.events ?? []) {
      const s = e.activityTaskScheduledEventAttributes;
      if (s) scheduled.set(String(e.eventId), { type: s.activityType?.name ?? '', input: decodePayload(s.input) });
      const c = e.activityTaskCompletedEventAttributes;
      const act = c ? scheduled.get(String(c.scheduledEventId)) : undefined;
      if (c && act?.type === 'evaluateTest') {
        const input = act.input as { label: string; checkpoint: unknown; harness: unknown };
        const result = decodePayload(c.result) as { meanAt8: number };
        evals.push({ checkpoint: ArtifactRef.parse(input.checkpoint), harness: ArtifactRef.parse(input.harness), harnessName: `harness@${ArtifactRef.parse(input.harness).sha256.slice(0, 12)}`, meanAt8: result.meanAt8, label: input.label });
      }
    }
  }
  // The best pair as the workflow counts it: later evaluations only (the initial one when nothing else ran);
  // the first to reach the maximum wins, as in the workflow's strict comparison.
  const candidates = evals.filter((e) => e.label !== 'initial');
  let best: EvaluatedPair | null = null;
  for (const e of candidates.length ? candidates : evals) if (best === null || (e.meanAt8 ?? -1) > (best.meanAt8 ?? -1)) best = e;
  const s = t.summary;
  let final: EvaluatedPair | null = null;
  if (s) {
    const match = [...evals].reverse().find((e) => e.checkpoint.sha256 === s.finalCheckpoint.sha256 && e.harness.sha256 === s.finalHarness.sha256);
    final = { checkpoint: s.finalCheckpoint, harness: s.finalHarness, harnessName: s.finalHarnessName, meanAt8: match?.meanAt8 ?? s.finalMeanAt8, label: match?.label ?? null };
    if (best && best.harness.sha256 === final.harness.sha256) best.harnessName = final.harnessName;
  }
  return {
    runId, status: t.status, config: t.config,
    initialMeanAt8: evals.find((e) => e.label === 'initial')?.meanAt8 ?? null,
    bestMeanAt8: s?.bestMeanAt8 ?? best?.meanAt8 ?? null, finalMeanAt8: s?.finalMeanAt8 ?? null, final, best,
  };
}

/** The pair `which` names, or an error that says why the run has none. */
export function pickPair(outcome: RunOutcome, which: 'final' | 'best'): EvaluatedPair {
  const pair = which === 'final' ? outcome.final : outcome.best;
  if (!pair) {
    throw new AgentBundleError(which === 'final'
      ? `run ${outcome.runId} is ${outcome.status}, so it has no final checkpoint yet: wait for it to complete, or use --which best (its best evaluated checkpoint so far)`
      : `run ${outcome.runId} has no D_test evaluation yet, so it has no best checkpoint: wait for its first evaluation`);
  }
  return pair;
}

function loadDomainInstance(domain: string): { instance: DomainInstance; name: string; taskFromText?: (text: string) => EnvTask } {
  if (parseDomainRef(domain)) {
    const m = loadDomainModule(domain);
    return { instance: m.instance(), name: m.module.name, taskFromText: m.module.taskFromText };
  }
  return { instance: getDomain(domain).load({ kind: 'synthetic' }), name: domain };
}

function writeJsonAtomic(file: string, value: unknown): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n');
  renameSync(tmp, file);
}

/** Writes the bundle folder `out` (it must not exist; built beside it, then renamed into place). */
export async function exportBundle(client: Client, store: ArtifactStore, runId: string, out: string, which: 'final' | 'best'): Promise<BundleManifest> {
  if (existsSync(out)) throw new AgentBundleError(`${out} already exists: choose another --out folder or remove it`);
  const { decodeCheckpoint } = require('../model') as typeof import('../model');
  const { exportHfFolder } = require('../model/checkpoints/hf-folder') as typeof import('../model/checkpoints/hf-folder');
  const { readCheckpointPointer } = require('../backends/checkpoint-pointer') as typeof import('../backends/checkpoint-pointer');
  const { ROLLOUT_LIMITS } = require('../training/rollout-limits') as typeof import('../training/rollout-limits');
  const { TEST_EVAL_STEP, TEST_SAMPLING } = require('../activities/model-activities') as typeof import('../activities/model-activities');
  const outcome = await readRunOutcome(client, runId);
  const pair = pickPair(outcome, which);
  const config = outcome.config;
  const ckpt = await store.get(pair.checkpoint).catch((err: Error) => {
    throw new AgentBundleError(`the run's checkpoint ${pair.checkpoint.uri} cannot be read from the artifact store (${err.message}): export on a machine that shares the workers' store`);
  });
  const harness = await store.get(pair.harness).catch((err: Error) => {
    throw new AgentBundleError(`the run's harness ${pair.harness.uri} cannot be read from the artifact store (${err.message})`);
  });
  const pointer = await readCheckpointPointer(store, pair.checkpoint);
  if (!pointer) decodeCheckpoint(ckpt, `checkpoint ${pair.checkpoint.uri}`);
  else if (!existsSync(path.join(pointer.model, 'config.json'))) {
    throw new AgentBundleError(`the run's weights are served model ${pointer.model}, which is not a Hugging Face folder on this machine (no config.json there): export on a machine that sees the trainer's checkpoint folders`);
  }
  const { instance, name } = loadDomainInstance(config.domain);
  const ref = parseDomainRef(config.domain);
  const tmp = `${out}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    if (pointer) cpSync(pointer.model, path.join(tmp, 'hf'), { recursive: true });
    else {
      writeFileSync(path.join(tmp, 'checkpoint.ckpt'), ckpt);
      await exportHfFolder(decodeCheckpoint(ckpt), path.join(tmp, 'hf'));
    }
    const hfFiles = Object.fromEntries(listFiles(path.join(tmp, 'hf')).map((rel) => [rel, sha256Hex(readFileSync(path.join(tmp, 'hf', rel)))]));
    writeFileSync(path.join(tmp, 'harness.ts'), harness);
    if (ref) {
      for (const rel of domainFiles(ref.dir)) cpSync(path.join(ref.dir, rel), path.join(tmp, 'domain', rel));
      const copied = hashDomainFolder(path.join(tmp, 'domain'));
      if (copied !== ref.sha256) throw new AgentBundleError(`the domain folder ${ref.dir} changed since the run (hash ${copied}, the run pinned ${ref.sha256}): restore it to export an honest bundle`);
    }
    const manifest: BundleManifest = {
      bundleVersion: BUNDLE_VERSION, runId, which, exportedAt: new Date().toISOString(),
      domain: { name, ref: config.domain, kind: ref ? 'folder' : 'builtin', sha256: ref?.sha256 ?? null, answerKind: instance.environment.answerKind, tools: instance.environment.tools.map((t) => ({ ...t })) },
      checkpoint: pointer ? null : { file: 'checkpoint.ckpt', sha256: sha256Hex(ckpt), bytes: ckpt.byteLength },
      hf: { dir: 'hf', source: pointer ? 'pointer' : 'export', model: pointer?.model ?? null, files: hfFiles },
      harness: { file: 'harness.ts', sha256: sha256Hex(harness), bytes: harness.byteLength, name: pair.harnessName },
      scores: {
        initialMeanAt8: outcome.initialMeanAt8, bestMeanAt8: outcome.bestMeanAt8, finalMeanAt8: outcome.finalMeanAt8,
        exportedMeanAt8: pair.meanAt8, exportedLabel: pair.label, testTaskLimit: config.test.taskLimit, testSamplesPerTask: config.test.samplesPerTask,
      },
      run: { method: config.method, seed: config.seed, modelPreset: config.model.preset },
      sampling: { ...TEST_SAMPLING, topP: 1, ...ROLLOUT_LIMITS, step: TEST_EVAL_STEP },
    };
    writeJsonAtomic(path.join(tmp, 'manifest.json'), manifest);
    renameSync(tmp, out);
    return manifest;
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** Every file under `dir`, as forward-slash paths relative to it, sorted. */
function listFiles(dir: string, rel = ''): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(path.join(dir, rel)).sort().flatMap((name) => {
    const r = rel ? `${rel}/${name}` : name;
    return statSync(path.join(dir, r)).isDirectory() ? listFiles(dir, r) : [r];
  });
}

export interface LoadedBundle {
  dir: string;
  manifest: BundleManifest;
  manifestSha256: string;
  /** Null for a bundle of a run on a served model (its weights are the hf/ folder). */
  checkpoint: Uint8Array | null;
  harnessSource: string;
  /** For a bundle of a built-in domain: its registry name (the code is this project's). */
  builtinDomain: string | null;
  /** For a bundle that brings its own domain code: the `domain/` folder and its verified content hash. */
  domainCode: { dir: string; sha256: string } | null;
}

/** Reads and verifies a bundle folder (manifest schema, file hashes, domain copy hash); runs none of its code. */
export function loadBundle(dir: string): LoadedBundle {
  const abs = path.resolve(dir);
  const file = path.join(abs, 'manifest.json');
  if (!existsSync(file)) throw new AgentBundleError(`${abs} is not an agent bundle (no manifest.json): make one with \`whale agent export <run> --out <dir>\``);
  const text = readFileSync(file, 'utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new AgentBundleError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = BundleManifestSchema.safeParse(json);
  if (!parsed.success) throw new AgentBundleError(`${file} is not a bundle manifest version ${BUNDLE_VERSION}:\n${parsed.error.issues.slice(0, 10).map((i) => `  - ${i.path.join('.')}: ${i.message}`).join('\n')}`);
  const manifest = parsed.data;
  const read = (name: string, sha: string) => {
    const p = path.join(abs, name);
    if (!existsSync(p)) throw new AgentBundleError(`bundle ${abs} lacks ${name}`);
    const bytes = readFileSync(p);
    const got = sha256Hex(bytes);
    if (got !== sha) throw new AgentBundleError(`bundle ${abs}: ${name} has sha256 ${got}, the manifest says ${sha} (the file was changed or damaged): export the bundle again`);
    return bytes;
  };
  const checkpoint = manifest.checkpoint ? new Uint8Array(read(manifest.checkpoint.file, manifest.checkpoint.sha256)) : null;
  if (manifest.hf) {
    const listed = Object.keys(manifest.hf.files).sort();
    const present = listFiles(path.join(abs, 'hf'));
    const extra = present.filter((f) => !(f in manifest.hf!.files));
    if (extra.length) throw new AgentBundleError(`bundle ${abs}: hf/ holds ${extra.slice(0, 5).join(', ')}, which the manifest does not list: remove it or export the bundle again`);
    for (const f of listed) read(`hf/${f}`, manifest.hf.files[f]);
  }
  if (!checkpoint && !manifest.hf) throw new AgentBundleError(`bundle ${abs}: the manifest names no checkpoint and no hf/ folder, so the bundle has no weights: export it again`);
  const harnessSource = read(manifest.harness.file, manifest.harness.sha256).toString('utf8');
  if (manifest.domain.kind === 'builtin') {
    checkBuiltinDomain(abs, manifest.domain.ref);
    return { dir: abs, manifest, manifestSha256: sha256Hex(text), checkpoint, harnessSource, builtinDomain: manifest.domain.ref, domainCode: null };
  }
  const copy = path.join(abs, 'domain');
  if (!existsSync(copy)) throw new AgentBundleError(`bundle ${abs} lacks its domain/ folder (the manifest names a domain folder)`);
  if (manifest.domain.sha256 === null) throw new AgentBundleError(`bundle ${abs}: the manifest names a domain folder but no domain.sha256 (its content hash): export the bundle again`);
  checkCodeIsHashed(abs);
  const sha256 = hashDomainFolder(copy);
  if (sha256 !== manifest.domain.sha256) throw new AgentBundleError(`bundle ${abs}: domain/ has content hash ${sha256}, the manifest says ${manifest.domain.sha256} (the folder was changed or damaged): export the bundle again`);
  return { dir: abs, manifest, manifestSha256: sha256Hex(text), checkpoint, harnessSource, builtinDomain: null, domainCode: { dir: copy, sha256 } };
}

/** Built-in domains whose environment works on a question with no reference (tools and submit do not read it). */
function builtinTextTask(domain: string, text: string): EnvTask | null {
  if (domain !== 'math' && domain !== 'search-qa') return null;
  return { id: `${domain}/text/${sha256Hex(text).slice(0, 12)}`, itemId: 'text', question: text, view: {}, hidden: null };
}

export interface BundleTaskResult {
  task: { id: string; question: string; fromText: boolean; split: string | null };
  /** Rewards per sample; null where the task has no reference (free text). */
  rewards: Array<0 | 1 | null>;
  trajectories: Trajectory[];
}

/**
 * Runs the bundle's agent on one task: a task id of the domain (any split), or free text when the domain
 * can make a task from text. Samples 0..n-1 use the seeds of the run's test evaluation for (seed, task).
 */
export async function runBundleTask(bundle: LoadedBundle, taskArg: string, opts: { seed: number; samples: number; threads: number; trust: BundleCodeTrust }): Promise<BundleTaskResult> {
  const checkpoint = bundle.checkpoint;
  if (!checkpoint) {
    throw new AgentBundleError(`bundle ${bundle.dir} comes from a run on a served model: its weights are the Hugging Face folder ${path.join(bundle.dir, 'hf')}, which the embedded sampler cannot run. Serve that folder (docs/real-models.md) and train it on with \`whale run <config> --from ${bundle.dir}\` and an OpenAI-compatible rollout backend`);
  }
  const { instance, taskFromText } = loadDomainInstance(bundleDomain(bundle, opts.trust));
  let task: EnvTask | undefined = instance.taskById(taskArg);
  const fromText = !task;
  if (!task) {
    task = taskFromText ? taskFromText(taskArg) : builtinTextTask(bundle.manifest.domain.ref, taskArg) ?? undefined;
    if (!task) {
      throw new AgentBundleError(`"${taskArg}" is not a task id of domain ${bundle.manifest.domain.name}, and that domain cannot make a task from free text; give a task id, e.g. ${instance.splits.test.slice(0, 3).map((t) => t.id).join(', ')}`);
    }
  }
  const split = fromText ? null : (['test', 'harness', 'weight'] as const).find((s) => instance.splits[s].some((t) => t.id === task!.id)) ?? null;
  // A free-text task has no reference: its verdict is not computed (the verifier would read a missing answer).
  const environment = fromText ? Object.assign(Object.create(instance.environment) as typeof instance.environment, { verify: () => 0 as const }) : instance.environment;
  const { SandboxPool } = require('../harness-sandbox/pool') as typeof import('../harness-sandbox/pool');
  const { decodeCheckpoint, OrtSampler } = require('../model') as typeof import('../model');
  const { runEpisodes } = require('../agent/loop') as typeof import('../agent/loop');
  const pool = new SandboxPool({ processes: 1 });
  let sampler: OrtSampler | null = null;
  try {
    const loaded = await loadBundleHarness(pool, bundle.harnessSource);
    if (!loaded.ok) throw new AgentBundleError(`bundle harness does not load: ${loaded.failure.kind}: ${loaded.failure.reason}`);
    sampler = await OrtSampler.fromCheckpoint(decodeCheckpoint(checkpoint, `bundle ${bundle.dir} checkpoint`), { threads: opts.threads, maxBatchRows: 256 });
    const s = bundle.manifest.sampling;
    const { trajectories } = await runEpisodes({
      backend: sampler, environment, harness: loaded.runner, tasks: [task], samplesPerTask: opts.samples,
      sampling: { temperature: s.temperature, topK: s.topK, topP: s.topP, maxNewTokensPerTurn: s.maxNewTokensPerTurn, maxEpisodeTokens: s.maxEpisodeTokens },
      runSeed: opts.seed, step: s.step,
    });
    return {
      task: { id: task.id, question: task.question, fromText, split },
      rewards: trajectories.map((t) => (fromText ? null : (t.reward as 0 | 1))),
      trajectories,
    };
  } finally {
    await sampler?.close();
    await pool.close();
  }
}

/**
 * The bundle's harness in the sandbox. A shared harness is untrusted source: a parser or checker that gives
 * up on it (a RangeError for too deep nesting) is a compile error of that harness, not a crash of the CLI.
 */
async function loadBundleHarness(pool: SandboxPool, source: string): Promise<LoadHarnessResult> {
  try {
    return await pool.loadHarness(source);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return { ok: false, failure: { kind: 'compile-error', reason: `the compiler gave up on it (${err.message})` }, violations: [] };
  }
}

/** A readable transcript of one episode: every message the model saw and wrote, tool results, the verdict. */
export function formatTranscript(t: Trajectory, reward: 0 | 1 | null): string {
  const lines = [`--- sample ${t.sampleIndex} (task ${t.taskId}, harness ${t.harnessName}) ---`];
  for (const m of t.messages) lines.push(`[${m.role}] ${m.content}`);
  lines.push(`final answer: ${t.finalAnswer ?? '(none)'}; stop: ${t.stopReason}; reward: ${reward === null ? 'n/a (no reference for free text)' : reward}`);
  return lines.join('\n');
}
