// Stronger hand-written harnesses per built-in domain, for tests and reports ONLY: they show what a good
// harness reaches at given weights. Never hand these to a proposer or copy them into a harness archive
// (the search must find its own mechanisms).
import { join } from 'node:path';
import { readTextFile } from './common/line-loader';
import type { BuiltinDomainName } from './registry';

export const REFERENCE_HARNESS_FILES: Readonly<Record<BuiltinDomainName, string>> = {
  'search-qa': join(__dirname, 'search-qa', 'reference-harnesses', 'strong.ts'),
  math: join(__dirname, 'math', 'reference-harnesses', 'strong.ts'),
  chess: join(__dirname, 'chess', 'reference-harnesses', 'strong.ts'),
};

export function readReferenceHarness(domain: BuiltinDomainName): string {
  return readTextFile(REFERENCE_HARNESS_FILES[domain]);
}
