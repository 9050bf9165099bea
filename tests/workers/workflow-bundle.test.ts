// The pre-built workflow bundle: its content hash follows the workflow sources (a copy of a small import
// tree changed file by file), a missing bundle is refused with the command that builds it or built at once
// (atomically, reused afterwards), and the built file replays a recorded run through `workflowBundle: { codePath }`.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import { bundlePath, resolveWorkflowBundle, workflowSourcesHash } from '../../workers/workflow-bundle';
import { staleBundlePolicy, workerVersioning } from '../../workers/orchestration';
import { ROOT } from '../workflows/env';

const work = mkdtempSync(path.join(tmpdir(), 'whale-bundle-'));
after(() => rmSync(work, { recursive: true, force: true }));

describe('the workflow sources hash', () => {
  it('covers every file reachable by import and the packages they use, and nothing else', () => {
    const tree = path.join(work, 'tree');
    mkdirSync(path.join(tree, 'wf', 'decisions'), { recursive: true });
    mkdirSync(path.join(tree, 'other'), { recursive: true });
    const entry = path.join(tree, 'wf', 'index.ts');
    writeFileSync(entry, "export { run } from './run';\n");
    writeFileSync(path.join(tree, 'wf', 'run.ts'), "import { z } from 'zod';\nimport { decide } from './decisions';\nimport type { T } from '../other/types';\nexport const run = () => decide(z);\n");
    writeFileSync(path.join(tree, 'wf', 'decisions', 'index.ts'), 'export const decide = (x: unknown) => x;\n');
    writeFileSync(path.join(tree, 'other', 'types.ts'), 'export type T = number;\n');
    writeFileSync(path.join(tree, 'other', 'unrelated.ts'), 'export const u = 1;\n');
    const first = workflowSourcesHash(entry, tree);
    assert.deepEqual(first.files, ['other/types.ts', 'wf/decisions/index.ts', 'wf/index.ts', 'wf/run.ts']);
    assert.match(first.hash, /^[0-9a-f]{16}$/);
    assert.equal(workflowSourcesHash(entry, tree).hash, first.hash, 'stable');
    writeFileSync(path.join(tree, 'other', 'unrelated.ts'), 'export const u = 2;\n');
    assert.equal(workflowSourcesHash(entry, tree).hash, first.hash, 'a file the workflows do not import does not count');
    writeFileSync(path.join(tree, 'wf', 'decisions', 'index.ts'), 'export const decide = (x: unknown) => [x];\n');
    const second = workflowSourcesHash(entry, tree).hash;
    assert.notEqual(second, first.hash, 'a changed imported file changes the hash');
    writeFileSync(path.join(tree, 'wf', 'run.ts'), "import { decide } from './decisions';\nimport { gone } from './missing';\nexport const run = () => decide(gone);\n");
    assert.throws(() => workflowSourcesHash(entry, tree), /wf\/run\.ts imports '\.\/missing', which resolves to no file/);
  });

  it('the project\'s own workflow sources hash to a 16-digit id that names the bundle file', () => {
    const { hash, files } = workflowSourcesHash();
    assert.ok(files.includes('workflows/whale-run.ts') && files.includes('workflows/index.ts'), files.join(', '));
    assert.equal(bundlePath(hash, work), path.join(work, `${hash}.js`));
  });
});

describe('resolving the bundle at worker start', () => {
  it('refuses a missing bundle under WHALE_WORKFLOW_BUNDLE=prebuilt, naming the command that builds it', async () => {
    const empty = path.join(work, 'empty');
    await assert.rejects(resolveWorkflowBundle('refuse', () => undefined, empty), /no pre-built workflow bundle for the current workflow sources \(hash [0-9a-f]{16}.*node --import tsx scripts\/bundle-workflows\.ts/);
    assert.equal(staleBundlePolicy({ WHALE_WORKFLOW_BUNDLE: 'prebuilt' }), 'refuse');
    assert.equal(staleBundlePolicy({}), 'rebuild');
    assert.throws(() => staleBundlePolicy({ WHALE_WORKFLOW_BUNDLE: 'yes' }), /WHALE_WORKFLOW_BUNDLE must be 'auto' .* or 'prebuilt'/);
  });

  it('builds a missing bundle once (atomically), reuses it, and the file replays a recorded run', async () => {
    const dir = path.join(work, 'bundles');
    const lines: string[] = [];
    const built = await resolveWorkflowBundle('rebuild', (l) => lines.push(l), dir);
    assert.equal(built.built, true);
    assert.match(lines.join('\n'), /workflow sources changed since the bundle was built .* building it now/);
    assert.deepEqual(readdirSync(dir), [`${built.hash}.js`], 'no temporary file left behind');
    const again = await resolveWorkflowBundle('refuse', () => undefined, dir);
    assert.deepEqual([again.built, again.codePath], [false, built.codePath]);
    const history = JSON.parse(readFileSync(path.join(ROOT, 'tests', 'histories', 'v1', 'demo.json'), 'utf8'));
    await Worker.runReplayHistory({ workflowBundle: { codePath: built.codePath } }, history, 'demo');
  });
});

describe('Worker Versioning is opt-in', () => {
  it('off unless WHALE_WORKER_DEPLOYMENT names a deployment; then PINNED with the bundle hash as build id', () => {
    assert.equal(workerVersioning('0123456789abcdef', {}), undefined);
    assert.deepEqual(workerVersioning('0123456789abcdef', { WHALE_WORKER_DEPLOYMENT: 'whale' }), {
      useWorkerVersioning: true, version: { deploymentName: 'whale', buildId: '0123456789abcdef' }, defaultVersioningBehavior: 'PINNED',
    });
    assert.throws(() => workerVersioning('x', { WHALE_WORKER_DEPLOYMENT: 'my deployment' }), /WHALE_WORKER_DEPLOYMENT must be a deployment name/);
  });
});
