// Untrusted source is compiled and type-checked in the validator child under its limits: the review's
// reproductions and the hostile source cases each end as a typed failure (compile-error, timeout,
// memory-limit) within the stated bound, never a throw; this process's event loop keeps ticking meanwhile;
// no host file is read; nothing carries over between validations; a killed child is replaced at once; the
// proposer activities record hostile candidates as invalid rows. Prints the measured figures.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { SandboxPool } from '../../harness-sandbox/pool';
import { validateHarnessSource } from '../../harness-sandbox/validate';
import { ValidatorPool, sharedValidator } from '../../harness-sandbox/validator-pool';
import { FULL_HOOKS_SOURCE, harnessSource } from '../agent/harness-fixtures';
import { lookupEnv } from '../agent/toy-env';
import { cleanupDir, path, proposeInput, setUp } from '../proposers/fixtures';
import { OWN_CASES, REVIEW_CASES, SECRET_MARK, removeSecretFiles, type HostileSourceCase } from './hostile-source-cases';

const pool = new SandboxPool();
const validator = sharedValidator();
after(() => pool.close());
after(removeSecretFiles);
const tools = lookupEnv.tools;
const { cpuMs, wallMs } = validator.options;
const times = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i)).join('\n');
const figures: Array<{ name: string; kind: string; checkMs: number; maxGapMs: number }> = [];

/** Samples this process's event loop every 10 ms; `stop()` returns the longest gap between ticks. */
function loopWatch(): { stop(): { ticks: number; maxGapMs: number } } {
  let last = performance.now();
  let maxGapMs = 0;
  let ticks = 0;
  const t = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
    ticks++;
  }, 10);
  return {
    stop() {
      clearInterval(t);
      return { ticks, maxGapMs: Math.max(maxGapMs, performance.now() - last) };
    },
  };
}

async function assertHealthyValidates(): Promise<void> {
  const r = await validateHarnessSource(pool, FULL_HOOKS_SOURCE + `\n// ${Math.random()}\n`, tools);
  assert.ok(r.ok, `a healthy harness right after: ${JSON.stringify(r.violations)}`);
}

before(async () => {
  await Promise.all([validator.warmUp(), pool.warmUp()]);
});

function runCase(c: HostileSourceCase): void {
  void test(`hostile source: ${c.name} -> ${c.expect.join(' | ')}`, async () => {
    await validator.warmUp(); // a replacement for an earlier kill may still be starting: not this case's time
    const extended = validator.counts.extended;
    const watch = loopWatch();
    const t0 = performance.now();
    const checked = await validator.check(c.source);
    const checkMs = performance.now() - t0;
    const { ticks, maxGapMs } = watch.stop();
    const r = await validateHarnessSource(pool, c.source, tools);
    const kind = r.ok ? 'clean' : (r.failure?.kind ?? 'none');
    figures.push({ name: c.name, kind, checkMs: Math.round(checkMs), maxGapMs: Math.round(maxGapMs) });
    assert.ok((c.expect as string[]).includes(kind), `got ${kind}: ${r.failure?.reason ?? ''}`);
    if (c.reason && !r.ok) assert.match(r.failure?.reason ?? '', c.reason);
    assert.ok(!JSON.stringify({ r, checked }).includes(SECRET_MARK), 'a host file was read');
    // The stated bound: the CPU cap or the wall cap, whichever first; 4x the wall cap when machine load
    // starved the request of half its CPU budget; 1.5 s of slack for sampling, the kill and IPC.
    const bound = wallMs * (validator.counts.extended > extended ? 4 : 1) + 1_500;
    assert.ok(checkMs < bound, `validation took ${Math.round(checkMs)} ms, bound ${bound} ms`);
    // The caller's event loop never waits on the compiler (in-process, these cases blocked it for seconds).
    assert.ok(maxGapMs < 1_000 && ticks >= Math.floor(checkMs / 100), `event loop: ${ticks} ticks, longest gap ${Math.round(maxGapMs)} ms`);
    await assertHealthyValidates();
  });
}

for (const c of REVIEW_CASES) runCase(c);
for (const c of OWN_CASES) runCase(c);

void test('loadHarness: deep nesting is a compile-error result, not a RangeError', async () => {
  for (const c of REVIEW_CASES.filter((x) => x.reason?.source.includes('nested'))) {
    const loaded = await pool.loadHarness(c.source);
    assert.ok(!loaded.ok);
    assert.equal(loaded.failure.kind, 'compile-error');
    assert.match(loaded.failure.reason, /nested too deeply/);
  }
});

void test('nothing carries over between validations: augmentations of the shared contract and lib stay in their own check', async () => {
  const augmenter = harnessSource(
    {},
    '',
    "declare global { interface Array<T> { leakProbe: number } }\ndeclare module 'whale:helpers' { export function leakHelper(): string; }\nexport const n: number = ([] as number[]).leakProbe;",
  );
  const a = await validator.check(augmenter);
  assert.ok(a.types?.ok && a.types.violations.length === 0, `the augmenting candidate type-checks: ${JSON.stringify(a.types)}`);
  const probe = harnessSource({}, '', "import { leakHelper } from 'whale:helpers';\nexport const n: number = ([] as number[]).leakProbe;\nexport const s: string = leakHelper();");
  const p = await validator.check(probe);
  const messages = p.types?.violations.map((v) => v.message).join('\n') ?? '';
  assert.match(messages, /leakProbe/, 'Array gained no member from the earlier candidate');
  assert.match(messages, /leakHelper/, 'whale:helpers gained no export from the earlier candidate');
});

void test('a killed validator child is replaced at once (no request needed) and the next harness validates', async () => {
  const own = new ValidatorPool({ cpuMs: 1_000 });
  try {
    await own.warmUp();
    const first = own.pid;
    // The type-level string doubling: out of heap or over the CPU cap, either way the child is killed.
    const r = await own.check(REVIEW_CASES[0].source);
    const died = performance.now();
    assert.equal(r.types?.ok, false);
    assert.equal(own.restarts, 1);
    await own.warmUp(); // resolves when the replacement started at the death is ready
    const restartMs = performance.now() - died;
    assert.ok(own.pid !== undefined && own.pid !== first, 'a fresh child');
    const t0 = performance.now();
    const healthy = await own.check(FULL_HOOKS_SOURCE);
    const healthyMs = performance.now() - t0;
    assert.ok(healthy.compile.ok && healthy.types?.ok && healthy.types.violations.length === 0);
    figures.push({ name: `restart after a kill (ready again; target 5000 ms)`, kind: 'restart', checkMs: Math.round(restartMs), maxGapMs: 0 });
    figures.push({ name: 'healthy harness, warm child, not cached', kind: 'healthy', checkMs: Math.round(healthyMs), maxGapMs: 0 });
    // Start-up is ~1.3 s of CPU; the bound leaves room for a loaded machine but fails on a lazy restart.
    assert.ok(restartMs < 15_000, `replacement ready after ${Math.round(restartMs)} ms`);
  } finally {
    await own.close();
  }
});

void test('a check over its CPU budget between declarations is stopped by the child itself: a typed timeout, no restart', async () => {
  const own = new ValidatorPool({ cpuMs: 1_500 });
  try {
    await own.warmUp();
    // Each interface is checked on its own (function bodies are deferred); the checker polls the child's
    // CPU budget between them.
    const slow = harnessSource({}, '', times(100, (i) => `type B${i}<A extends 0[] = []> = A['length'] extends ${400 + i} ? A : B${i}<[...A, 0]>;\nexport interface I${i} { x: B${i} }`));
    const r = await own.check(slow);
    assert.equal(r.types?.ok, false, JSON.stringify(r.types));
    assert.ok(r.types && !r.types.ok);
    assert.equal(r.types.failure.kind, 'timeout');
    assert.match(r.types.failure.reason, /CPU budget/);
    assert.equal(own.restarts, 0, 'the child stopped itself and stays warm');
  } finally {
    await own.close();
  }
});

void test('a source is compiled and type-checked once per process: the same source again is a cache hit', async () => {
  const source = FULL_HOOKS_SOURCE + '\n// cache probe\n';
  const requests = validator.counts.requests;
  await validateHarnessSource(pool, source, tools);
  assert.equal(validator.counts.requests, requests + 1, 'one request for compile + type check (loadHarness reuses it)');
  const t0 = performance.now();
  await validateHarnessSource(pool, source, tools);
  await pool.loadHarness(source);
  assert.equal(validator.counts.requests, requests + 1, 'no new request');
  figures.push({ name: 'healthy harness validated again (cache hit, sandbox load included)', kind: 'cached', checkMs: Math.round(performance.now() - t0), maxGapMs: 0 });
});

void test('proposer activities: hostile candidates become invalid rows with their reason; nothing throws', async () => {
  const h = await setUp('search-qa', pool);
  const dir = path.join(h.root, 'agent-script');
  try {
    const tuples = REVIEW_CASES[1].source;
    const parens = REVIEW_CASES[2].source;
    writeFileSync(`${dir}.mjs`, `import { writeFileSync } from 'node:fs';
writeFileSync('proposals/c1.ts', ${JSON.stringify(parens)});
writeFileSync('proposals/c2.ts', ${JSON.stringify(tuples)});
writeFileSync('pending_eval.json', JSON.stringify({ candidates: [{ file: 'proposals/c1.ts', hypothesis: 'h', axis: 'a' }, { file: 'proposals/c2.ts', hypothesis: 'h', axis: 'a' }] }));
`);
    const r = await h.acts.proposeHarnesses(proposeInput(h, 'search-qa', 1, { kind: 'coding-agent', command: [process.execPath, `${dir}.mjs`], timeoutMs: 30_000 }, { count: 2 }));
    assert.equal(r.candidates.length, 2, r.failure ?? '');
    const kinds: string[] = [];
    for (const c of r.candidates) {
      const v = await h.acts.validateHarness({ runId: 'run', domain: 'search-qa', archiveKey: h.archiveKey, name: c.name, source: c.source, promptOnlyBase: null });
      assert.equal(v.valid, false);
      kinds.push(v.failureKind ?? '');
    }
    assert.deepEqual(kinds, ['compile-error', 'timeout']);
  } finally {
    cleanupDir(h.root);
  }
});

void test('validator figures (machine shared with other work: timings are noisy)', () => {
  const worst = new Map<string, number>();
  for (const f of figures) worst.set(f.kind, Math.max(worst.get(f.kind) ?? 0, f.checkMs));
  console.log(`validator limits: ${cpuMs} ms CPU, ${wallMs} ms wall, ${validator.options.heapMb} MiB heap; restarts so far ${validator.restarts}, starved requests given more wall time ${validator.counts.extended}, retries ${validator.counts.retries}`);
  for (const f of figures) console.log(`  ${f.kind.padEnd(14)} ${String(f.checkMs).padStart(6)} ms  loop gap ${String(f.maxGapMs).padStart(4)} ms  ${f.name}`);
  console.log(`  slowest per result: ${[...worst].map(([k, ms]) => `${k} ${ms} ms`).join(', ')}`);
  assert.ok(figures.length >= REVIEW_CASES.length + OWN_CASES.length);
});
