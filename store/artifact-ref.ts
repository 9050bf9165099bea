// The one reference type every workflow input, activity result and archive row uses to point at bytes.
// Workflow-safe (zod only): workflows/ imports the schema through store/ref-schema re-export.
import { z } from 'zod';

export const ARTIFACT_KINDS = [
  'checkpoint',
  'trajectories',
  'harness',
  'archive',
  'evaluation',
  'dataset',
  'report',
  'config',
  'blob',
] as const;

export const ArtifactKind = z.enum(ARTIFACT_KINDS);
export type ArtifactKind = z.infer<typeof ArtifactKind>;

const SHA256 = /^[0-9a-f]{64}$/;

/** A content-addressed reference: the URI names the content, sha256 proves it, bytes sizes it. */
export const ArtifactRef = z
  .object({
    kind: ArtifactKind,
    uri: z.string().regex(/^cas:\/\/sha256\/[0-9a-f]{64}$/, 'uri must look like cas://sha256/<64 hex>'),
    sha256: z.string().regex(SHA256, 'sha256 must be 64 lowercase hex digits'),
    bytes: z.number().int().nonnegative(),
  })
  .refine((r) => r.uri.endsWith(r.sha256), { message: 'uri and sha256 disagree' });
export type ArtifactRef = z.infer<typeof ArtifactRef>;

export function uriForSha256(sha256: string): string {
  return `cas://sha256/${sha256}`;
}
