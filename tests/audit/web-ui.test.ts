// What the Temporal Web UI shows of a run, on a real `whale dev` (dev server with its Web UI, real
// orchestration, model and proposer workers): a tiny WHALE run started with `whale start` carries its
// summary (method, domain, seed) and details, every activity carries a one-line summary, the workflow's
// current details say where it stands, the audit links the run's Web UI page, and that page shows the summary.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium } from 'playwright-core';
import { freePort, ROOT, temporalBinary, waitFor } from '../workflows/env';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ID = 'ui-metadata-1';
const RUN = {
  version: 1, name: 'web ui metadata', method: 'whale-fixed', domain: 'math', seed: 2,
  weight: { promptsPerStep: 16, samplesPerPrompt: 4, minibatchSize: 8, learningRate: 3e-4 },
  switching: { kind: 'fixed', weightEpochs: 0.001, harnessRounds: 2 },
  harness: { candidatesPerRound: 2, taskLimit: 8 },
  budget: { totalWeightSteps: 2 },
  test: { everyEpochs: 1000, samplesPerTask: 2, taskLimit: 16 },
};

let dir: string;
let env: NodeJS.ProcessEnv;
let dev: ChildProcess | null = null;
let devOut = '';
let address: string;
let uiPort: number;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'whale-web-ui-'));
  const port = await freePort();
  uiPort = await freePort();
  address = `127.0.0.1:${port}`;
  env = {
    ...process.env, WHALE_TEMPORAL_ADDRESS: address, WHALE_DEV_PORT: String(port), WHALE_DEV_UI_PORT: String(uiPort),
    WHALE_DEV_DATA_DIR: path.join(dir, 'temporal'), WHALE_ARTIFACT_DIR: path.join(dir, 'artifacts'), WHALE_MODEL_THREADS: '1',
  };
  // With its Web UI (not --headless): the test opens the run's page in it.
  dev = spawn(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), 'dev'], { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  dev.stdout?.on('data', (d: Buffer) => (devOut += d.toString()));
  dev.stderr?.on('data', (d: Buffer) => (devOut += d.toString()));
  await waitFor('whale dev to be ready', async () => {
    if (dev?.exitCode !== null) throw new Error(`whale dev exited early:\n${devOut}`);
    const polling = ['orchestration', 'model', 'proposer'].every((k) => devOut.includes(`[whale] ${k} worker polling`));
    return devOut.includes('press Ctrl-C') && polling ? true : undefined;
  }, 600_000).catch((err: Error) => Promise.reject(new Error(`${err.message}\n--- whale dev output ---\n${devOut.slice(-4000)}`)));
});

after(async () => {
  const p = dev;
  if (p && p.exitCode === null) {
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGINT');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

function whale(args: string[]): string {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], { encoding: 'utf8', env, cwd: dir, timeout: 600_000 });
  assert.equal(r.status, 0, `whale ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}\n--- whale dev ---\n${devOut.slice(-3000)}`);
  return r.stdout;
}

type JsonPayload = { data?: string } | undefined;
type JsonEvent = {
  eventType: string;
  userMetadata?: { summary?: JsonPayload; details?: JsonPayload };
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
};

/** A payload as `temporal workflow show --output json` prints it (base64 JSON) decoded to its string. */
function text(p: JsonPayload): string | undefined {
  return p?.data === undefined ? undefined : (JSON.parse(Buffer.from(p.data, 'base64').toString('utf8')) as string);
}

describe('Web UI user metadata on a real whale dev', () => {
  it('a run started with whale start carries its summary and details, and every activity a summary', async (t) => {
    writeFileSync(path.join(dir, 'run.json'), JSON.stringify(RUN));
    const t0 = Date.now();
    assert.equal(whale(['start', 'run.json', '--id', ID]).trim(), ID);
    const connection = await Connection.connect({ address });
    try {
      const client = new Client({ connection });
      const handle = client.workflow.getHandle(ID);
      await handle.result();
      t.diagnostic(`run finished in ${((Date.now() - t0) / 1000).toFixed(0)} s`);

      // The history as the temporal CLI shows it (what the Web UI reads).
      const shown = spawnSync(temporalBinary(), ['workflow', 'show', '-w', ID, '--output', 'json', '--address', address], { encoding: 'utf8' });
      assert.equal(shown.status, 0, shown.stderr);
      const events = (JSON.parse(shown.stdout) as { events: JsonEvent[] }).events;
      const started = events[0];
      assert.equal(started.eventType, 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED');
      assert.equal(text(started.userMetadata?.summary), 'WHALE whale-fixed on math, seed 2 (web ui metadata)');
      assert.match(text(started.userMetadata?.details) ?? '', /\*\*method\*\* whale-fixed, \*\*domain\*\* math, \*\*seed\*\* 2\n\*\*model\*\* embedded-1m/);

      const scheduled = events.filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
      const unnamed = scheduled.filter((e) => !text(e.userMetadata?.summary)).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
      assert.deepEqual(unnamed, [], 'every activity has a summary');
      const summaries = scheduled.map((e) => `${e.activityTaskScheduledEventAttributes?.activityType?.name}: ${text(e.userMetadata?.summary)}`);
      t.diagnostic(summaries.join('\n'));
      for (const s of [
        'prepareRun: prepare run: whale-fixed on math, seed 2',
        'evaluateTest: test evaluation initial at step 0',
        'rolloutBatch: rollout batch, step 1, 64 rollouts',
        'fineTuneStep: fine-tune step 1',
        'evaluateHarness: harness 1 round 0: re-score the incoming harness',
        'proposeHarnesses: harness 1 round 1: propose 2 candidates',
        'validateHarness: harness 1 round 1, candidate r1-c1: validate',
        'rolloutBatch: rollout batch, step 2, 64 rollouts',
        'fineTuneStep: fine-tune step 2',
      ]) assert.ok(summaries.includes(s), `missing "${s}"`);
      assert.ok(summaries.some((s) => /^evaluateHarness: harness 1 round 1, candidate r1-c\d: score on D_harness$/.test(s)), 'a scored candidate');
      assert.ok(summaries.some((s) => /^finalizeHarnessPhase: harness 1: close the archive, accepted \S+$/.test(s)));

      // Current details: answered by the orchestration worker (the UI's "current details" query).
      const meta = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      assert.match(meta.currentDetails ?? '', /^\*\*completed\*\*, phase done, cycle 2: 2 weight steps, 1 proposal rounds\nrollouts 128 training \+ \d+ search/);
    } finally {
      await connection.close();
    }
  });

  it('the audit links the run\'s Web UI page, and that page shows the summary', async (t) => {
    whale(['audit', ID, '--out', 'audit']);
    const url = `http://127.0.0.1:${uiPort}/namespaces/default/workflows/${ID}`;
    const html = readFileSync(path.join(dir, 'audit', 'index.html'), 'utf8');
    assert.ok(html.includes(`<a href="${url}">`), 'index.html links the run\'s page');
    assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: scripts/test.sh installs Debian's chromium (or set CHROMIUM_PATH)`);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
      // Kept when asked for (reports/operations holds them): what a person sees on the run's page.
      const shotDir = process.env.WHALE_WEB_UI_SCREENSHOT_DIR ?? path.join(dir, 'shots');
      mkdirSync(shotDir, { recursive: true });
      await page.goto(url);
      // The UI is a single-page app (it redirects to the latest run's timeline): poll its DOM, never sleep.
      await waitFor('the Web UI to show the run page', async () => ((await page.innerText('main').catch(() => '')).includes('User Metadata') ? true : undefined), 60_000);
      assert.match(page.url(), new RegExp(`/namespaces/default/workflows/${ID}/[0-9a-f-]{36}/`), 'the link lands on the run');
      // The timeline draws its rows as they load: wait for the last activity's summary before the picture.
      await waitFor('the timeline to show the activity summaries', async () => ((await page.innerText('main')).includes('fine-tune step 2') ? true : undefined), 60_000);
      await page.screenshot({ path: path.join(shotDir, 'web-ui-timeline.png'), fullPage: true });
      await page.getByText('User Metadata', { exact: true }).first().click();
      // The UI renders each Markdown field in a sandboxed frame of its own: read the text of every frame.
      const allText = async () => (await Promise.all(page.frames().map((f) => f.innerText('body').catch(() => '')))).join('\n');
      let shown = '';
      const main = await waitFor('the User Metadata tab to show the summary and the current details', async () => {
        shown = await allText();
        return shown.includes('WHALE whale-fixed on math, seed 2 (web ui metadata)') && /completed, phase done/.test(shown) ? shown : undefined;
      }, 60_000).catch((err: Error) => Promise.reject(new Error(`${err.message}; the tab shows:\n${shown.slice(0, 3000)}`)));
      assert.match(main, /method whale-fixed, domain math, seed 2/, 'the details, rendered from Markdown');
      const shot = path.join(shotDir, 'web-ui-user-metadata.png');
      await page.screenshot({ path: shot, fullPage: true });
      assert.ok(statSync(shot).size > 20_000, 'the screenshot is not blank');
      t.diagnostic(`screenshots in ${shotDir}`);
    } finally {
      await browser.close();
    }
  });
});
