// The committed base policies: each manifest's sha256 matches its checkpoint file, the checkpoint decodes
// to the manifest's preset and loads into a sampler; a missing one fails naming `whale pretrain`.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeCheckpoint, modelConfig, OrtSampler, type PresetName } from '../../model';
import { BASE_POLICY_DIR, basePolicyManifestSchema, basePolicyPaths, loadBasePolicy } from '../../training/base-policy';

const DOMAINS = ['math', 'search-qa', 'chess'];
const committed = DOMAINS.filter((d) => existsSync(basePolicyPaths(d).manifest));

void test('the math base policy is committed (the weight-phase demo needs it)', () => {
  assert.ok(committed.includes('math'), `missing ${basePolicyPaths('math').checkpoint}`);
});

for (const domain of committed) {
  void test(`${domain}: the manifest's sha256 matches the committed checkpoint, which loads`, async () => {
    const paths = basePolicyPaths(domain);
    const manifest = basePolicyManifestSchema.parse(JSON.parse(readFileSync(paths.manifest, 'utf8')));
    const file = readFileSync(paths.checkpoint);
    assert.equal(createHash('sha256').update(file).digest('hex'), manifest.sha256);
    assert.equal(file.byteLength, manifest.bytes);
    const { bytes } = loadBasePolicy(domain);
    const ck = decodeCheckpoint(bytes);
    assert.deepEqual(ck.config, modelConfig(manifest.preset as PresetName));
    assert.equal(ck.step, 0);
    assert.ok(manifest.steps > 0 && manifest.corpus.examples > 0 && Number.isFinite(manifest.finalLoss));
    assert.match(manifest.command, new RegExp(`^whale pretrain --domain ${domain}\\b`));
    const sampler = await OrtSampler.fromCheckpoint(ck, { threads: 1 });
    await sampler.close();
  });
}

void test('a missing or altered base policy is a clear error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'whale-base-'));
  try {
    assert.throws(() => loadBasePolicy('math', dir), /whale pretrain --domain math/);
    if (committed.length > 0) {
      const d = committed[0];
      const src = basePolicyPaths(d);
      const dst = basePolicyPaths(d, dir);
      writeFileSync(dst.manifest, readFileSync(src.manifest));
      const bytes = readFileSync(src.checkpoint);
      bytes[bytes.length - 1] ^= 1;
      writeFileSync(dst.checkpoint, bytes);
      assert.throws(() => loadBasePolicy(d, dir), /sha256/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('the base policy directory is data/base-policies', () => {
  assert.match(BASE_POLICY_DIR, /data[/\\]base-policies$/);
});
