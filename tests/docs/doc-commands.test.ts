// Every shell command shown in README.md, docs/*.md and the folder READMEs, run as written against a real
// `whale dev --headless` installation (own port, database and artifact store) from a scratch folder that
// links the repository's entries, so nothing lands in the working tree. Each block's marker says how.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startProductCluster, type ProductCluster } from '../product/cluster';
import { freePort, ROOT, waitFor } from '../workflows/env';
import { docFiles, expandSynopsis, readBlocks, type Command } from './doc-blocks';
import { durationMs, runShell } from './doc-run';

// What the commands find in their folder: the repository's entries a documented command reads, linked (so
// writes into bundles/, reports/, .data/, agent/ stay in the scratch folder), and the files docs name.
const LINKED = ['bin', 'data', 'examples', 'presets', 'scripts', 'trainers', 'node_modules', 'package.json', 'package-lock.json', 'tsconfig.json', '.tools'];
// A tiny real run (one weight step on math, its test evaluations on 8 tasks x 2 samples): the finished run the
// placeholders name.
const TINY = { version: 1, method: 'weights-only', domain: 'math', seed: 5, weight: { promptsPerStep: 8, samplesPerPrompt: 4, minibatchSize: 8 }, budget: { totalWeightSteps: 1 }, test: { everyEpochs: 1, samplesPerTask: 2, taskLimit: 8 } };
// The runs the docs operate on by name (my-run) or start from run.json: a WHALE method, so a switching policy
// update applies; started paused, so its harness phases never use the CPU. Smaller than TINY (4 test tasks, 4 x 2
// rollouts a step): what the docs do to it (stop, reset, resume) runs its initial and final test evaluations.
const ADAPTIVE = { ...TINY, method: 'whale-adaptive', weight: { promptsPerStep: 4, samplesPerPrompt: 2, minibatchSize: 8 }, test: { everyEpochs: 1, samplesPerTask: 2, taskLimit: 4 }, harness: { taskLimit: 4 } };
const MY_RUN = 'my-run';
const TINY_ID = 'docs-tiny';

let cluster: ProductCluster;
let client: Client;
let spare: number;
let tinyDone: Promise<unknown>;
let bundleDir: Promise<string> | undefined;
const counts = new Map<string, { ran: number; skipped: number }>();
const started = Date.now();

before(async () => {
  cluster = await startProductCluster('docs');
  for (const e of LINKED) symlinkSync(path.join(ROOT, e), path.join(cluster.dir, e));
  for (const f of ['run.json', 'my-run.json']) writeFileSync(path.join(cluster.dir, f), JSON.stringify(ADAPTIVE));
  symlinkSync(path.join(ROOT, 'data', 'base-policies', 'math.ckpt'), path.join(cluster.dir, 'ckpt.bin'));
  // ./my-domain, the folder docs/bring-your-own-domain.md has the reader write: the example domain.
  symlinkSync(path.join(ROOT, 'examples', 'pairs-domain'), path.join(cluster.dir, 'my-domain'));
  mkdirSync(path.join(cluster.dir, 'out-dir'));
  client = new Client({ connection: await Connection.connect({ address: cluster.env.WHALE_TEMPORAL_ADDRESS }) });
  spare = await freePort();
  tinyDone = client.workflow.start('whaleRun', { taskQueue: 'whale-orchestration', workflowId: TINY_ID, args: [TINY] }).then((h) => h.result());
  tinyDone.catch(() => undefined);
});
after(async () => {
  await client?.connection.close();
  await cluster?.teardown();
  const lines = [...counts].map(([f, c]) => `  ${f}: ran ${c.ran}, skipped ${c.skipped}`);
  console.log(`doc commands (${((Date.now() - started) / 1000).toFixed(0)} s):\n${lines.join('\n')}`);
});

function baseEnv(): NodeJS.ProcessEnv {
  return { ...cluster.env, TEMPORAL_ADDRESS: cluster.env.WHALE_TEMPORAL_ADDRESS, PATH: `${path.join(ROOT, '.tools', 'bin')}${path.delimiter}${process.env.PATH}` };
}

/** For `starts`: its own task queues, so a worker started and interrupted never holds an activity of the fixtures. */
function startsEnv(): NodeJS.ProcessEnv {
  return { ...baseEnv(), WHALE_QUEUE_ORCHESTRATION: 'docs-starts-orchestration', WHALE_QUEUE_MODEL: 'docs-starts-model', WHALE_QUEUE_PROPOSER: 'docs-starts-proposer' };
}

async function myRunStatus(): Promise<string | undefined> {
  try {
    return (await client.workflow.getHandle(MY_RUN).describe()).status.name;
  } catch {
    return undefined;
  }
}

/** What a command needs in place before it runs (the marker's fixture=...), and extra variables for it. */
async function fixture(name: string | undefined): Promise<NodeJS.ProcessEnv> {
  if (name === undefined) return {};
  if (name === 'my-run-running' || name === 'my-run-fresh') {
    // Started with a pause signal, which the run applies as soon as it is initialised: it waits before its
    // first step without using the CPU. Updates are refused before the run is initialised, also when a
    // documented `temporal workflow start` started it a moment ago.
    const fresh = name === 'my-run-fresh' || (await myRunStatus()) !== 'RUNNING';
    // A run ending on its own between the status check and the terminate (e.g. after a documented stop) is fine.
    if (fresh && (await myRunStatus()) === 'RUNNING') await client.workflow.getHandle(MY_RUN).terminate('doc test: a fresh my-run for the next command').catch((err: Error) => { if (err.name !== 'WorkflowNotFoundError') throw err; });
    const h = fresh
      ? await client.workflow.signalWithStart('whaleRun', { taskQueue: 'whale-orchestration', workflowId: MY_RUN, args: [ADAPTIVE], signal: 'pause', signalArgs: [] })
      : client.workflow.getHandle(MY_RUN);
    await waitFor('my-run to be initialised', async () => ((await h.query('status').catch(() => null)) ? true : undefined), 180_000);
    return {};
  }
  if (name === 'no-my-run') {
    if ((await myRunStatus()) === 'RUNNING') await client.workflow.getHandle(MY_RUN).terminate('doc test: the command starts my-run').catch((err: Error) => { if (err.name !== 'WorkflowNotFoundError') throw err; });
    return {};
  }
  if (name === 'spare-server-port') {
    // `whale dev` refuses a port where a server answers: give it one of its own.
    return { WHALE_TEMPORAL_ADDRESS: `127.0.0.1:${spare}`, TEMPORAL_ADDRESS: `127.0.0.1:${spare}`, WHALE_DEV_PORT: String(spare), WHALE_DEV_UI_PORT: String(spare + 1), WHALE_DEV_DATA_DIR: path.join(cluster.dir, 'spare-temporal') };
  }
  throw new Error(`unknown fixture=${name} (my-run-running, my-run-fresh, no-my-run, spare-server-port)`);
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** Runs the doc commands start that the fixtures do not own end (they would use the CPU for nothing). */
async function endStrayRuns(): Promise<void> {
  for await (const w of client.workflow.list({ query: 'ExecutionStatus = "Running"' })) {
    if (w.workflowId === MY_RUN || w.workflowId === TINY_ID) continue;
    await client.workflow.getHandle(w.workflowId, w.runId).terminate('doc test: a run a documented command started').catch(() => undefined);
  }
}

/** The placeholder table: values made by the test (a finished tiny run, its bundle, an event of my-run). */
async function placeholders(text: string, id: string | undefined): Promise<Record<string, string>> {
  const v: Record<string, string> = { task: '12 + 30 = ?', 'task id or question': 'What is 12 + 30?', dir: 'out-dir' };
  if (id !== undefined) v['workflow id'] = v['run id'] = id; // the marker's id=: a run in another state (e.g. my-run, running)
  else if (/<(workflow id|run id|bundle|bundle dir)>/.test(text)) {
    await tinyDone;
    v['workflow id'] = v['run id'] = TINY_ID;
  }
  if (/<(bundle|bundle dir)>/.test(text)) await tinyDone;
  if (/<(bundle|bundle dir)>/.test(text)) {
    bundleDir ??= runShell(`node bin/whale.js agent export ${TINY_ID} --out docs-bundle`, { cwd: cluster.dir, env: baseEnv(), mode: 'run', timeoutMs: 120_000 })
      .then((r) => (r.ok ? 'docs-bundle' : Promise.reject(new Error(`exporting the fixture bundle failed: ${r.why}\n${r.output}`))));
    v.bundle = v['bundle dir'] = await bundleDir;
  }
  if (text.includes('<N>')) {
    const events = (await client.workflow.getHandle(MY_RUN).fetchHistory()).events ?? [];
    const last = events.filter((e) => e.workflowTaskCompletedEventAttributes).at(-1);
    assert.ok(last, 'my-run has a completed workflow task to reset to');
    v.N = String(last.eventId);
  }
  return v;
}

async function runCommand(c: Command): Promise<string | null> {
  const d = c.directive;
  const extraEnv = await fixture(d.options.fixture);
  // A fixed port the command binds (e.g. serve's 8000) that another program on this machine holds: not this
  // command's fault, and not the doc's; counted as skipped and said.
  if (d.options.port && !(await portFree(Number(d.options.port)))) return 'port-busy';
  const starts = d.kind === 'starts';
  let texts: string[];
  if (d.kind === 'run-with-placeholders' || starts) texts = expandSynopsis(c.text, await placeholders(c.text, d.options.id));
  else if (/<[a-z][^<>]*>/i.test(c.text.replace(/\s+#\s.*$/, ''))) return 'has a placeholder: mark it run-with-placeholders';
  else texts = [c.text];
  for (const text of texts) {
    const t0 = Date.now();
    const r = await runShell(text, {
      cwd: cluster.dir, env: { ...(starts ? startsEnv() : baseEnv()), ...extraEnv }, mode: starts ? 'starts' : 'run',
      timeoutMs: durationMs(d.options.timeout, starts ? 30_000 : 60_000),
      ...(d.options.expect ? { expect: new RegExp(d.options.expect, 'm') } : {}),
      ...(d.options.exit ? { exit: Number(d.options.exit) } : {}),
    });
    await endStrayRuns();
    console.log(`  ${r.ok ? 'ok  ' : 'FAIL'} ${((Date.now() - t0) / 1000).toFixed(1)} s  ${text.split('\n')[0].slice(0, 100)}`);
    if (!r.ok) return `${text}\n  ${r.why}\n  --- output (end) ---\n${r.output.slice(-3000)}`;
  }
  return null;
}

const blocks = readBlocks(ROOT);
describe('documented commands run as written', () => {
  it('every shell block in the docs carries a valid doc-test marker', () => {
    assert.deepEqual(blocks.flatMap((b) => b.problems), []);
  });
  for (const file of docFiles(ROOT)) {
    const mine = blocks.filter((b) => b.file === file && b.problems.length === 0);
    if (mine.length === 0) continue;
    it(file, async () => {
      const c = { ran: 0, skipped: 0 };
      counts.set(file, c);
      const failures: string[] = [];
      for (const b of mine) {
        let exports = '';
        for (const cmd of b.commands) {
          if (/^export\s/.test(cmd.text)) exports += `${cmd.text}\n`;
          if (cmd.directive.kind === 'skip') {
            c.skipped++;
            continue;
          }
          const failure = await runCommand({ ...cmd, text: exports && !/^export\s/.test(cmd.text) ? exports + cmd.text : cmd.text });
          if (failure === 'port-busy') {
            console.log(`  skipped ${file}:${cmd.line}: port ${cmd.directive.options.port} is in use by another program`);
            c.skipped++;
            continue;
          }
          c.ran++;
          if (failure) failures.push(`${file}:${cmd.line} (${cmd.directive.kind}): ${failure}`);
        }
      }
      assert.deepEqual(failures, [], `documented commands that do not work as written:\n${failures.join('\n\n')}`);
    });
  }
});
