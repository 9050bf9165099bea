// The audit summary's Markdown as HTML (marked, GFM tables). The summary carries model-written text and
// harness code names, so nothing in it may become markup: raw HTML is shown as text, links keep only safe
// schemes, images become their alt text. The one markup let through is the report's own <details> wrapper.
import { Marked, type Tokens } from 'marked';

/** Block HTML the report itself writes (summaryMarkdown's collapsible signal lists); anything else is text. */
const OWN_BLOCKS = new Set(['<details><summary>signals</summary>', '</details>']);
const SAFE_SCHEME = /^(https?|mailto):/i;
const ANY_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const marked = new Marked({
  gfm: true,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag): string {
      if (token.block && OWN_BLOCKS.has(token.text.trim())) return token.text;
      return token.block ? `<p>${escapeHtml(token.text)}</p>\n` : escapeHtml(token.text);
    },
    link(token: Tokens.Link): string {
      const text = this.parser.parseInline(token.tokens);
      // Browsers ignore control characters and spaces in a scheme ("java\tscript:"): judge it without them.
      const href = token.href.replace(/[\u0000-\u0020\u007f]/g, '');
      if (ANY_SCHEME.test(href) && !SAFE_SCHEME.test(href)) return text;
      return `<a href="${escapeHtml(token.href)}"${token.title ? ` title="${escapeHtml(token.title)}"` : ''}>${text}</a>`;
    },
    image(token: Tokens.Image): string {
      return escapeHtml(token.text);
    },
  },
});

/** The summary as an HTML fragment in which text from the run (names, hypotheses, reasons) stays text. */
export function markdownToSafeHtml(md: string): string {
  return marked.parse(md, { async: false });
}
