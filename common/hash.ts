// Content hashing helpers: sha256 of text, and a stable 32-bit seed derived from any string.
import { createHash } from 'node:crypto';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** First 32 bits of sha256: stable seed derivation from any string. */
export function hashToUint32(text: string): number {
  return parseInt(sha256Hex(text).slice(0, 8), 16) >>> 0;
}
