// What `whale run` / `whale start` do to a run config before starting it: pin a domain folder path as a
// content-hashed reference, and branch off another run or an exported agent bundle (`--from`): its
// checkpoint and harness become model.baseCheckpoint / model.baseHarness, and `lineage` records where they
// came from, so the audit shows the run's ancestry. The workflow itself sees only an ordinary run config.
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { DirectoryArtifactStore, type ArtifactStore } from '../store/artifact-store';
import { loadTemporalConfig } from '../temporal.config';
import { connectClient } from '../workers/connection';
import { PROJECT_ROOT } from './paths';
import { DomainModuleError, isDomainPath, resolveDomainArgument } from '../domains/external';
// agent-bundle and hf-command (the model runtime, the sandbox, TypeScript) load only when --from needs them.
import type * as AgentBundle from './agent-bundle';
import type * as HfCommand from './hf-command';
import { WhaleError } from '../common/errors';

/** A user error in the run's sources (domain folder, --from): printed without a stack. */
export class RunSourceError extends WhaleError {
  override name = 'RunSourceError';
  readonly fault = 'user-input';
}

export interface RunSourceOptions {
  /** Relative domain paths in a config file are relative to the file's folder; on the command line, to the cwd. */
  configDir: string;
  /** --domain: overrides the config's domain (a registry name or a folder, relative to the cwd). */
  domain?: string;
  /** --from: a run's workflow id, or an agent bundle folder. */
  from?: string;
  /** --from-which: the parent's final (default) or best checkpoint-harness pair; runs only. */
  which?: string;
  /** --trust-bundle-code: a --from bundle's own domain code may run (the CLI pins it, the workers load it). */
  trustBundleCode?: boolean;
  client: () => Promise<Client>;
  store: () => ArtifactStore;
}

function asObject(raw: unknown): Record<string, unknown> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new RunSourceError('the run config must be a JSON object');
  return raw as Record<string, unknown>;
}

/** Returns the run config to start, with the domain pinned and the `--from` parent applied. */
export async function applyRunSources(raw: unknown, opts: RunSourceOptions): Promise<unknown> {
  const config = { ...asObject(raw) };
  if (opts.domain !== undefined) config.domain = pin(opts.domain, process.cwd());
  else if (typeof config.domain === 'string') config.domain = pin(config.domain, opts.configDir);
  if (opts.from === undefined) {
    if (opts.which !== undefined) throw new RunSourceError('--from-which needs --from <run id | bundle folder>');
    return config;
  }
  const which = opts.which ?? 'final';
  if (which !== 'final' && which !== 'best') throw new RunSourceError(`--from-which must be final or best; got '${which}'`);
  const model = { ...(typeof config.model === 'object' && config.model !== null ? config.model as Record<string, unknown> : {}) };
  if (model.baseCheckpoint || model.baseHarness) throw new RunSourceError('--from sets model.baseCheckpoint and model.baseHarness: remove them from the run config, or drop --from');
  const { bundleDomain, loadBundle, pickPair, readRunOutcome } = require('./agent-bundle') as typeof AgentBundle;
  try {
    if (looksLikeBundle(opts.from)) {
      if (opts.which !== undefined) throw new RunSourceError('--from-which applies to a run; a bundle holds the one pair it was exported with');
      const bundle = loadBundle(opts.from);
      // The domain first: a bundle whose code is refused leaves nothing in the artifact store.
      if (config.domain === undefined) config.domain = pin(bundleDomain(bundle, { trusted: opts.trustBundleCode === true, notice: (line) => process.stderr.write(`${line}\n`) }), process.cwd());
      const store = opts.store();
      // A bundle of a run on a served model carries its weights as hf/: the new run starts from a pointer to it.
      const { storeHfPointer } = require('./hf-command') as typeof HfCommand;
      const baseCheckpoint = bundle.checkpoint ? await store.put('checkpoint', bundle.checkpoint) : await storeHfPointer(store, path.join(bundle.dir, 'hf'));
      const baseHarness = await store.put('harness', bundle.harnessSource);
      config.model = { ...model, baseCheckpoint, baseHarness };
      config.lineage = {
        kind: 'bundle', parentRunId: bundle.manifest.runId, which: bundle.manifest.which, parentDomain: bundle.manifest.domain.ref,
        parentMeanAt8: bundle.manifest.scores.exportedMeanAt8, bundlePath: bundle.dir, bundleManifestSha256: bundle.manifestSha256,
      };
      return config;
    }
    const outcome = await readRunOutcome(await opts.client(), opts.from);
    const pair = pickPair(outcome, which);
    if (config.domain === undefined) config.domain = outcome.config.domain;
    config.model = { ...model, baseCheckpoint: pair.checkpoint, baseHarness: pair.harness };
    config.lineage = { kind: 'run', parentRunId: opts.from, which, parentDomain: outcome.config.domain, parentMeanAt8: pair.meanAt8, bundlePath: null, bundleManifestSha256: null };
    return config;
  } catch (err) {
    if (err instanceof (require('./agent-bundle') as typeof AgentBundle).AgentBundleError || err instanceof DomainModuleError) throw new RunSourceError(err.message);
    if (err instanceof Error && /no run with workflow id/.test(err.message)) throw new RunSourceError(`--from ${opts.from}: not a bundle folder, and ${err.message}`);
    throw err;
  }
}

function looksLikeBundle(from: string): boolean {
  return existsSync(from) && statSync(from).isDirectory();
}

function pin(domain: string, baseDir: string): string {
  if (!isDomainPath(domain)) return domain;
  try {
    return resolveDomainArgument(domain, baseDir);
  } catch (err) {
    throw new RunSourceError((err as Error).message);
  }
}

/** The folder a config file's relative paths are relative to. */
export function configDirOf(file: string | undefined): string {
  return file ? path.dirname(path.resolve(file)) : process.cwd();
}

export interface RunSourceCliOptions {
  domain?: string;
  from?: string;
  fromWhich?: string;
  trustBundleCode?: boolean;
}

/** `applyRunSources` with the CLI's own connection and artifact store (both made only when --from needs them). */
export function applyCliRunSources(raw: unknown, file: string | undefined, opts: RunSourceCliOptions): Promise<unknown> {
  return applyRunSources(raw, {
    configDir: configDirOf(file), domain: opts.domain, from: opts.from, which: opts.fromWhich, trustBundleCode: opts.trustBundleCode,
    client: () => connectClient(loadTemporalConfig()),
    store: () => new DirectoryArtifactStore(path.resolve(PROJECT_ROOT, loadTemporalConfig().artifactDir)),
  });
}
