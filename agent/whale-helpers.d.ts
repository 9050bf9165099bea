// Types of `whale:helpers`, the only module a harness may import values from (implementation:
// harness-sandbox/helpers-source.ts). Pure, synchronous string helpers.
declare module 'whale:helpers' {
  /** Replaces `{key}` with `String(values[key])`; unknown keys stay as written. */
  export function fillTemplate(template: string, values: Record<string, string | number | boolean>): string;
  /** Cuts `text` to at most `maxChars` characters, ending with `marker` ('...' by default) when cut. */
  export function truncate(text: string, maxChars: number, marker?: string): string;
  /** The body of the first complete `<tag>...</tag>`, or null. */
  export function extractTag(text: string, tag: string): string | null;
  /** The bodies of all complete `<tag>...</tag>` in order. */
  export function extractTags(text: string, tag: string): string[];
  /** Collapses runs of whitespace to one space and trims. */
  export function normalizeWhitespace(text: string): string;
}
