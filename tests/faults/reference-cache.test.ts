// The soak's reference cache (testbed/reference-cache.ts): of two soaks that want the same reference, one
// runs it and the other waits for its file; a lock left by a process that is gone is taken over; the file is
// never seen half-written.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { cachedReferenceOrLock, releaseReference, storeReference } from '../../testbed/reference-cache';

const dir = mkdtempSync(path.join(tmpdir(), 'whale-refcache-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('soak reference cache', () => {
  it('lets one soak run the reference while another waits for its file', async () => {
    const file = path.join(dir, 'a', 'reference-k1.json');
    const lines: string[] = [];
    assert.equal(await cachedReferenceOrLock(file, 60_000, (l) => lines.push(l)), null, 'the first soak runs it');
    assert.ok(existsSync(`${file}.lock`));
    // The second waits (the lock's process, this one, is alive) until the first stores the outcome.
    const second = cachedReferenceOrLock<{ n: number }>(file, 60_000, (l) => lines.push(l));
    let settled = false;
    void second.then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'the second soak must wait while the lock is held');
    storeReference(file, { n: 42 });
    releaseReference(file);
    assert.deepEqual(await second, { n: 42 });
    assert.equal(existsSync(`${file}.lock`), false);
    assert.deepEqual(readdirSync(path.dirname(file)), ['reference-k1.json'], 'no temp file is left');
    assert.ok(lines.some((l) => l.includes('another soak is running it')), lines.join('\n'));
  });

  it('takes over a lock whose process is gone, and runs the reference itself', async () => {
    const file = path.join(dir, 'b', 'reference-k2.json');
    await cachedReferenceOrLock(file, 60_000, () => undefined);
    releaseReference(file);
    // A pid that exited: the one of a finished child.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    writeFileSync(`${file}.lock`, gone);
    assert.equal(await cachedReferenceOrLock(file, 60_000, () => undefined), null);
    releaseReference(file);
    assert.equal(existsSync(`${file}.lock`), false);
  });

  it('gives up after the timeout with a message naming the lock', async () => {
    const file = path.join(dir, 'c', 'reference-k3.json');
    await cachedReferenceOrLock(file, 60_000, () => undefined);
    await assert.rejects(cachedReferenceOrLock(file, 600, () => undefined), /waiting for the reference another soak runs .*remove .*reference-k3\.json\.lock/);
    releaseReference(file);
  });
});
