// The allowlisted pure helper module `whale:helpers`, as JavaScript source: the same text is evaluated
// inside each isolate and by the in-process (unsandboxed) runner, so both see identical helpers.
// Types for authors: agent/whale-helpers.d.ts. Keep every helper pure, synchronous and total.

/**
 * Modules `require` resolves inside an isolate. compile.ts's ALLOWED_IMPORTS says the same for the static
 * check (a test keeps them equal); kept here so the sandbox child does not load the TypeScript compiler
 * (about 1.5 s of its start-up) just for this list.
 */
export const RUNTIME_IMPORTS = ['whale:helpers'] as const;

export const HELPERS_MODULE_JS = `(function () {
  'use strict';
  function fillTemplate(template, values) {
    return String(template).replace(/\\{([A-Za-z_][A-Za-z0-9_]*)\\}/g, function (whole, key) {
      return Object.prototype.hasOwnProperty.call(values, key) ? String(values[key]) : whole;
    });
  }
  function truncate(text, maxChars, marker) {
    var s = String(text);
    var m = marker === undefined ? '...' : String(marker);
    if (s.length <= maxChars) return s;
    return s.slice(0, Math.max(0, maxChars - m.length)) + m;
  }
  function extractTag(text, tag) {
    var s = String(text);
    var open = '<' + tag + '>';
    var close = '</' + tag + '>';
    var a = s.indexOf(open);
    if (a < 0) return null;
    var b = s.indexOf(close, a + open.length);
    return b < 0 ? null : s.slice(a + open.length, b);
  }
  function extractTags(text, tag) {
    var s = String(text);
    var out = [];
    var open = '<' + tag + '>';
    var close = '</' + tag + '>';
    var from = 0;
    for (;;) {
      var a = s.indexOf(open, from);
      if (a < 0) return out;
      var b = s.indexOf(close, a + open.length);
      if (b < 0) return out;
      out.push(s.slice(a + open.length, b));
      from = b + close.length;
    }
  }
  function normalizeWhitespace(text) {
    return String(text).replace(/\\s+/g, ' ').trim();
  }
  return Object.freeze({ fillTemplate: fillTemplate, truncate: truncate, extractTag: extractTag, extractTags: extractTags, normalizeWhitespace: normalizeWhitespace });
})()`;
