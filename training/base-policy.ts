// Committed base policies: data/base-policies/<domain>.ckpt (a WHALE checkpoint: weights, zero AdamW
// moments, step 0) and <domain>.json (how it was made: command, seed, preset, corpus, loss, sha256).
// prepareRun calls loadBasePolicy to put the bytes into the artifact store; `whale pretrain` writes them.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { decodeCheckpoint } from '../model';
import { WhaleError } from '../common/errors';

export const BASE_POLICY_DIR = join(__dirname, '..', 'data', 'base-policies');

export const basePolicyManifestSchema = z.object({
  domain: z.string(),
  /** The exact command that made the file; with `--steps` it reproduces it bit for bit on one thread. */
  command: z.string(),
  /** The command that repeats this run exactly (the steps actually taken). */
  reproduce: z.string(),
  seed: z.number().int(),
  preset: z.string(),
  params: z.number().int(),
  steps: z.number().int(),
  epochs: z.number(),
  minibatchSize: z.number().int(),
  peakLr: z.number(),
  stoppedBy: z.enum(['steps', 'minutes']),
  wallSeconds: z.number(),
  trainSeconds: z.number(),
  tokensPerSecond: z.number(),
  corpus: z.object({
    episodes: z.number().int(),
    examples: z.number().int(),
    tokens: z.number().int(),
    weightedTokens: z.number().int(),
    maxExampleTokens: z.number().int(),
    perHarness: z.array(z.object({ label: z.string(), episodes: z.number().int(), teacherSuccess: z.number(), examples: z.number().int() })),
  }),
  firstLoss: z.number(),
  finalLoss: z.number(),
  /** sha256 of the checkpoint file's bytes. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.number().int(),
  createdAt: z.string(),
  /** When pretraining continued from an earlier checkpoint (`--init`): that checkpoint's manifest. */
  get parent(): z.ZodOptional<typeof basePolicyManifestSchema> {
    return basePolicyManifestSchema.optional();
  },
});
export type BasePolicyManifest = z.infer<typeof basePolicyManifestSchema>;

export class BasePolicyMissingError extends WhaleError {
  override name = 'BasePolicyMissingError';
  readonly fault = 'user-input';
}

export function basePolicyPaths(domain: string, dir = BASE_POLICY_DIR): { checkpoint: string; manifest: string } {
  if (!/^[a-z0-9-]+$/.test(domain)) throw new Error(`invalid domain name ${JSON.stringify(domain)}`);
  return { checkpoint: join(dir, `${domain}.ckpt`), manifest: join(dir, `${domain}.json`) };
}

/**
 * The committed base checkpoint of a domain, verified against its manifest's sha256 and decodable as a
 * checkpoint. Throws BasePolicyMissingError naming `whale pretrain --domain X` when it is not there.
 */
export function loadBasePolicy(domain: string, dir = BASE_POLICY_DIR): { bytes: Uint8Array; manifest: BasePolicyManifest } {
  const paths = basePolicyPaths(domain, dir);
  if (!existsSync(paths.checkpoint) || !existsSync(paths.manifest)) {
    throw new BasePolicyMissingError(`no base policy for domain "${domain}" (${paths.checkpoint} and its .json manifest): run \`whale pretrain --domain ${domain}\` to make one, or set model.baseCheckpoint in the run config`);
  }
  const parsed = basePolicyManifestSchema.safeParse(JSON.parse(readFileSync(paths.manifest, 'utf8')));
  if (!parsed.success) throw new Error(`base policy manifest ${paths.manifest} is invalid (${z.prettifyError(parsed.error)}): re-run \`whale pretrain --domain ${domain}\``);
  const bytes = new Uint8Array(readFileSync(paths.checkpoint));
  const sha = createHash('sha256').update(bytes).digest('hex');
  if (sha !== parsed.data.sha256) throw new Error(`base policy ${paths.checkpoint} has sha256 ${sha}, its manifest says ${parsed.data.sha256} (corrupted or replaced): re-run \`whale pretrain --domain ${domain}\` or restore the file from git`);
  decodeCheckpoint(bytes, `base policy ${paths.checkpoint}`);
  return { bytes, manifest: parsed.data };
}

function writeAtomic(path: string, data: Uint8Array | string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/** Writes the checkpoint, then its manifest (with the file's sha256), each atomically. */
export function writeBasePolicy(out: string, bytes: Uint8Array, manifest: Omit<BasePolicyManifest, 'sha256' | 'bytes'>): BasePolicyManifest {
  const full: BasePolicyManifest = { ...manifest, sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.byteLength };
  writeAtomic(out, bytes);
  writeAtomic(out.replace(/\.ckpt$/, '') + '.json', JSON.stringify(full, null, 2) + '\n');
  return full;
}
