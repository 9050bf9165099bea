// The audit's HTML page in a real headless Chromium (Debian's package; scripts/test.sh installs it): it
// renders with no console errors, the plots show their marks and name the phases, the summary is HTML
// (its tables in the DOM match the run), the run links to its Web UI page, and markup written by a model
// into a candidate's name or hypothesis stays text: no script runs, no element or handler is created.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { buildTimeline, readHistoryFiles } from '../../audit/timeline';
import { explainPhases } from '../../audit/explain';
import { writeReport } from '../../audit/report';
import { ROOT } from '../workflows/env';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const out = mkdtempSync(path.join(tmpdir(), 'whale-audit-html-'));
after(() => rmSync(out, { recursive: true, force: true }));

const WEB_UI = 'http://127.0.0.1:8233/namespaces/default/workflows/fixed-schedule';
const HOSTILE_NAME = '<script>document.title="pwned-by-name"</script>';
const HOSTILE_HYPOTHESIS = '<b>bold?</b><img src=x onerror="document.title=1"> [click](javascript:document.title=2)';

function timeline() {
  return buildTimeline('fixed-schedule', readHistoryFiles([path.join(ROOT, 'tests', 'histories', 'v1', 'fixed-schedule.json')]));
}

async function launch(): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: scripts/test.sh installs Debian's chromium (or set CHROMIUM_PATH)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

describe('audit report in headless Chromium', () => {
  it('renders without console errors: three plots naming the phases, the summary tables in the DOM, the Web UI link', async () => {
    const t = timeline();
    const dir = path.join(out, 'plain');
    await writeReport(t, explainPhases(t), dir, {}, { webUiUrl: WEB_UI });
    const browser = await launch();
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 1400 } });
      const problems: string[] = [];
      page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`file://${path.join(dir, 'index.html')}`);
      const figures = await page.$$eval('figure svg', (svgs) => svgs.map((s) => ({
        marks: s.querySelectorAll('path, circle, rect').length, width: s.getBoundingClientRect().width,
        texts: [...s.querySelectorAll('text')].map((x) => x.textContent ?? ''),
      })));
      assert.equal(figures.length, 3, 'three plots');
      for (const f of figures) {
        assert.ok(f.width > 300, `plot width ${f.width}`);
        assert.ok(f.marks > 5, `plot has ${f.marks} marks`);
      }
      // The phases the run went through, by the names its WhalePhase search attribute used.
      const names = explainPhases(t).map((p) => `${p.kind}-${p.index}`);
      assert.deepEqual(names, ['weight-1', 'harness-1', 'weight-2', 'harness-2', 'weight-3']);
      for (const plot of [0, 1]) {
        for (const n of names) assert.ok(figures[plot].texts.filter((x) => x === n).length >= 2, `plot ${plot} names ${n} on its band and in the legend`);
      }

      const link = await page.$eval('#web-ui a', (a) => a.getAttribute('href'));
      assert.equal(link, WEB_UI);
      // Tables: the summary is rendered Markdown, not a <pre> of it.
      assert.equal(await page.$$eval('pre', (p) => p.filter((x) => x.textContent?.includes('| initial mean@8')).length), 0, 'no raw Markdown table');
      const tables = await page.$$eval('#summary table', (ts) => ts.map((tb) => ({
        head: [...tb.querySelectorAll('thead th')].map((th) => th.textContent?.trim()),
        rows: [...tb.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')),
      })));
      const result = tables.find((x) => x.head[0] === 'initial mean@8');
      assert.ok(result, 'the result table');
      assert.deepEqual(result.rows, [['0.1000', '0.4000', '0.4000', String(t.steps.length), String(t.steps.reduce((a, s) => a + s.rollouts, 0)), String(t.searchRollouts)]]);
      const candidates = tables.filter((x) => x.head[1] === 'candidate');
      assert.equal(candidates.length, t.harnessPhases.length, 'one candidate table per harness phase');
      candidates.forEach((c, i) => {
        const p = t.harnessPhases[i];
        assert.deepEqual(c.rows.map((r) => r[1]), p.rows.map((r) => `${r.name}${r.name === p.accepted ? ' (accepted)' : ''}`));
      });
      const steps = tables.find((x) => x.head[0] === 'step');
      assert.deepEqual(steps?.rows.map((r) => r[0]), t.steps.map((s) => String(s.step)));
      const tests = tables.find((x) => x.head[0] === 'label');
      assert.deepEqual(tests?.rows.map((r) => r[0]), t.tests.map((x) => x.label));
      const headings = await page.$$eval('#summary h3', (hs) => hs.map((h) => h.textContent ?? ''));
      for (const n of names) assert.ok(headings.some((h) => h.startsWith(`${n}:`)), `a section for ${n}`);
      assert.equal(await page.$$eval('#summary details', (d) => d.length), names.length, 'each phase\'s signals fold away');

      const shot = path.join(out, 'report.png');
      await page.screenshot({ path: shot, fullPage: true });
      assert.ok(statSync(shot).size > 20_000, 'the screenshot is not blank');
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });

  it('keeps markup from a candidate name or hypothesis inert: shown as text, no script, no handler, no javascript: link', async () => {
    const t = timeline();
    const row = t.harnessPhases[0].rows[1];
    row.name = HOSTILE_NAME;
    row.hypothesis = HOSTILE_HYPOTHESIS;
    const dir = path.join(out, 'hostile');
    await writeReport(t, explainPhases(t), dir);
    const browser = await launch();
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`file://${path.join(dir, 'index.html')}`);
      assert.equal(await page.title(), 'Audit fixed-schedule', 'nothing rewrote the title');
      const dom = await page.$eval('#summary', (s) => ({
        scripts: s.querySelectorAll('script, img, iframe, b').length,
        handlers: [...s.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
        jsLinks: [...s.querySelectorAll('a')].filter((a) => a.getAttribute('href')?.trim().toLowerCase().startsWith('javascript')).length,
        cells: [...s.querySelectorAll('td')].map((td) => td.textContent ?? ''),
      }));
      assert.deepEqual({ scripts: dom.scripts, handlers: dom.handlers, jsLinks: dom.jsLinks }, { scripts: 0, handlers: 0, jsLinks: 0 });
      assert.ok(dom.cells.includes(HOSTILE_NAME), 'the name is shown as the text it is');
      assert.ok(dom.cells.some((c) => c.includes('<b>bold?</b><img src=x onerror="document.title=1"> click')), `the hypothesis is shown as text: ${dom.cells.join(' | ')}`);
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });
});
