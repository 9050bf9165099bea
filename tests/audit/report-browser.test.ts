// The audit's HTML page in a real headless Chromium (Debian's package; scripts/test.sh installs it): it
// renders with no console errors, and the screenshot shows the three plots with their marks.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chromium } from 'playwright-core';
import { buildTimeline, readHistoryFiles } from '../../audit/timeline';
import { explainPhases } from '../../audit/explain';
import { writeReport } from '../../audit/report';
import { ROOT } from '../workflows/env';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const out = mkdtempSync(path.join(tmpdir(), 'whale-audit-html-'));
after(() => rmSync(out, { recursive: true, force: true }));

describe('audit report in headless Chromium', () => {
  it('renders without console errors and shows the three plots', async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: scripts/test.sh installs Debian's chromium (or set CHROMIUM_PATH)`);
    const t = buildTimeline('fixed-schedule', readHistoryFiles([path.join(ROOT, 'tests', 'histories', 'v1', 'fixed-schedule.json')]));
    await writeReport(t, explainPhases(t), out);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 1400 } });
      const problems: string[] = [];
      page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`file://${path.join(out, 'index.html')}`);
      const figures = await page.$$eval('figure svg', (svgs) => svgs.map((s) => ({ marks: s.querySelectorAll('path, circle, rect').length, width: s.getBoundingClientRect().width })));
      assert.equal(figures.length, 3, 'three plots');
      for (const f of figures) {
        assert.ok(f.width > 300, `plot width ${f.width}`);
        assert.ok(f.marks > 5, `plot has ${f.marks} marks`);
      }
      const shot = path.join(out, 'report.png');
      await page.screenshot({ path: shot, fullPage: true });
      assert.ok(statSync(shot).size > 20_000, 'the screenshot is not blank');
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });
});
