// A bundle is something people download and share: `whale agent run` and `whale start --from` must not run
// code from it unasked. Hand-made bundles (the math base policy, a real harness, a copy of the pairs example
// domain whose module writes a marker file when it is loaded) show: a built-in domain is never loaded from a
// path a manifest names; a bundle's own domain code runs only with --trust-bundle-code, after its content
// hash is printed; code Node could load beside the hashed files is refused; a harness the compiler gives up
// on is a compile error, not a crash. No server is needed (an unused address: nothing may reach one).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { BUNDLE_VERSION, type BundleManifest } from '../../cli/agent-bundle';
import { hashDomainFolder, loadDomainModule } from '../../domains/external';
import { TEST_EVAL_STEP, TEST_SAMPLING } from '../../activities/model-activities';
import { ROLLOUT_LIMITS } from '../../training/corpus';

const ROOT = path.resolve(__dirname, '..', '..');
const work = mkdtempSync(path.join(tmpdir(), 'whale-bundle-trust-'));
after(() => rmSync(work, { recursive: true, force: true }));

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const checkpoint = readFileSync(path.join(ROOT, 'data', 'base-policies', 'math.ckpt'));
const pairsHarness = readFileSync(path.join(ROOT, 'examples', 'pairs-domain', 'h0.ts'), 'utf8');
/** A D_test task id of the pairs domain, from the project's own copy (which writes no marker). */
const pairsTask = loadDomainModule(path.join(ROOT, 'examples', 'pairs-domain')).instance().splits.test[0].id;

/** A copy of the pairs domain whose module, when loaded, writes `marker` (proof that its code ran). */
function codeFolder(dir: string, marker: string): void {
  cpSync(path.join(ROOT, 'examples', 'pairs-domain'), dir, { recursive: true });
  const index = path.join(dir, 'index.ts');
  writeFileSync(index, `import { writeFileSync as markRan } from 'node:fs';\nmarkRan(${JSON.stringify(marker)}, 'the bundle code ran');\n` + readFileSync(index, 'utf8'));
}

interface BundleSpec { kind: 'builtin' | 'folder'; ref: string; harness?: string; withDomainCopy?: boolean }

/** Writes a bundle folder as `whale agent export` would (hashes included); returns its path and marker file. */
function makeBundle(name: string, spec: BundleSpec): { dir: string; marker: string; domainSha: string | null } {
  const dir = path.join(work, name);
  const marker = path.join(work, `${name}.marker`);
  mkdirSync(dir, { recursive: true });
  const harness = spec.harness ?? pairsHarness;
  writeFileSync(path.join(dir, 'checkpoint.ckpt'), checkpoint);
  writeFileSync(path.join(dir, 'harness.ts'), harness);
  let domainSha: string | null = null;
  if (spec.withDomainCopy) {
    codeFolder(path.join(dir, 'domain'), marker);
    domainSha = hashDomainFolder(path.join(dir, 'domain'));
  }
  const manifest: BundleManifest = {
    bundleVersion: BUNDLE_VERSION, runId: `hand-made-${name}`, which: 'final', exportedAt: new Date(0).toISOString(),
    domain: { name: spec.kind === 'folder' ? 'pairs' : spec.ref, ref: spec.ref, kind: spec.kind, sha256: domainSha, answerKind: 'answer', tools: [] },
    checkpoint: { file: 'checkpoint.ckpt', sha256: sha(checkpoint), bytes: checkpoint.byteLength },
    harness: { file: 'harness.ts', sha256: sha(harness), bytes: Buffer.byteLength(harness), name: 'h0' },
    scores: { initialMeanAt8: null, bestMeanAt8: null, finalMeanAt8: null, exportedMeanAt8: null, exportedLabel: null, testTaskLimit: null, testSamplesPerTask: 8 },
    run: { method: 'weights-only', seed: 3, modelPreset: 'tiny' },
    sampling: { ...TEST_SAMPLING, topP: 1, ...ROLLOUT_LIMITS, step: TEST_EVAL_STEP },
  };
  writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2));
  return { dir, marker, domainSha };
}

/** A run config with no domain, so a --from bundle's domain would be the run's. */
function runConfig(): string {
  const file = path.join(work, 'run.json');
  writeFileSync(file, JSON.stringify({ version: 1, method: 'weights-only' }));
  return file;
}

function whale(args: string[]) {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'whale.js'), ...args], {
    encoding: 'utf8', cwd: work, timeout: 300_000,
    env: { ...process.env, WHALE_TEMPORAL_ADDRESS: '127.0.0.1:1', WHALE_ARTIFACT_DIR: path.join(work, 'artifacts') },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('agent bundles run no foreign code unasked', () => {
  it('refuses a manifest that pairs kind builtin with a file:// ref, and loads none of that folder', () => {
    const evil = path.join(work, 'evil-domain');
    const marker = path.join(work, 'evil.marker');
    codeFolder(evil, marker);
    const b = makeBundle('builtin-file-ref', { kind: 'builtin', ref: `file://${evil}` });
    for (const args of [['agent', 'run', b.dir, pairsTask], ['start', runConfig(), '--from', b.dir]]) {
      const r = whale(args);
      assert.equal(r.code, 2, `${args[0]}: ${r.err}`);
      assert.match(r.err, /domain kind "builtin" with ref "file:\/\/.*", which is not a built-in domain \(search-qa, math, chess\): built-in domains load only from this project/);
      assert.equal(existsSync(marker), false, `${args[0]} ran code from the folder the manifest names`);
    }
    // A registry lookup by a name the registry object does not own is refused the same way.
    const proto = makeBundle('builtin-proto', { kind: 'builtin', ref: '__proto__' });
    assert.match(whale(['agent', 'run', proto.dir, 'x']).err, /"__proto__", which is not a built-in domain/);
  });

  it('refuses a bundle\'s own domain code without --trust-bundle-code, naming the flag and the hash', () => {
    const b = makeBundle('folder-untrusted', { kind: 'folder', ref: 'file:///elsewhere/pairs-domain#sha256=' + '0'.repeat(64), withDomainCopy: true });
    for (const args of [['agent', 'run', b.dir, pairsTask], ['start', runConfig(), '--from', b.dir]]) {
      const r = whale(args);
      assert.equal(r.code, 2, `${args[0]}: ${r.err}`);
      assert.match(r.err, /brings its own domain code/);
      assert.ok(r.err.includes(`content hash sha256 ${b.domainSha}`), r.err);
      assert.match(r.err, /pass --trust-bundle-code/);
      assert.equal(existsSync(b.marker), false, `${args[0]} ran the bundle's code without the flag`);
    }
    assert.equal(existsSync(path.join(work, 'artifacts')), false, 'a refused bundle leaves nothing in the artifact store');
  });

  it('refuses code Node could load that the domain hash does not cover, even with the flag', () => {
    const cases: [string, (dir: string) => void, RegExp][] = [
      ['node-modules-beside', (d) => { mkdirSync(path.join(d, 'node_modules', 'x'), { recursive: true }); writeFileSync(path.join(d, 'node_modules', 'x', 'index.js'), ''); }, /also holds "node_modules"/],
      ['dotfile-inside', (d) => writeFileSync(path.join(d, 'domain', '.hidden.js'), 'module.exports = 1;'), /domain\/\.hidden\.js is not covered by the domain's content hash/],
      ['link-inside', (d) => symlinkSync(path.join(ROOT, 'package.json'), path.join(d, 'domain', 'linked.json')), /domain\/linked\.json is not covered/],
    ];
    for (const [name, damage, message] of cases) {
      const b = makeBundle(name, { kind: 'folder', ref: 'pairs', withDomainCopy: true });
      damage(b.dir);
      const r = whale(['agent', 'run', b.dir, pairsTask, '--trust-bundle-code']);
      assert.equal(r.code, 2, `${name}: ${r.err}`);
      assert.match(r.err, message, name);
      assert.equal(existsSync(b.marker), false, name);
    }
  });

  it('runs the bundle\'s domain code with --trust-bundle-code, after printing its content hash', () => {
    const b = makeBundle('folder-trusted', { kind: 'folder', ref: 'pairs', withDomainCopy: true });
    const r = whale(['agent', 'run', b.dir, pairsTask, '--trust-bundle-code']);
    assert.equal(r.code, 0, r.err);
    assert.ok(r.err.includes(`running the bundle's own domain code ${path.join(b.dir, 'domain')} (content hash sha256 ${b.domainSha}), trusted by --trust-bundle-code`), r.err);
    assert.equal(readFileSync(b.marker, 'utf8'), 'the bundle code ran');
    assert.match(r.out, new RegExp(`task ${pairsTask.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(D_test\\)`));
    assert.match(r.out, /rewards: [01]\n/);
  });

  it('a harness with 1,200 nested parentheses does not load: compile-error, not a stack overflow', () => {
    const deep = `${pairsHarness}\nexport const deep = ${'('.repeat(1200)}1${')'.repeat(1200)};\n`;
    const b = makeBundle('deep-harness', { kind: 'builtin', ref: 'math', harness: deep });
    const r = whale(['agent', 'run', b.dir, 'Ana has 12 apples. Ana gets 30 more. How many apples does Ana have now?']);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /bundle harness does not load: compile-error: /);
    assert.doesNotMatch(r.err, /\n\s+at /, 'no stack trace');
  });
});
