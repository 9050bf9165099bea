// Entry point of the validator child (forked by harness-sandbox/validator-pool.ts with tsx and a small V8
// heap): compiles, statically checks and type-checks untrusted harness source, one request at a time. The
// TypeScript compiler has no limits of its own (type-level recursion can run for minutes or exhaust the heap;
// deep nesting overflows its stack), so it runs here: the worker watches this process's CPU, memory and
// wall time and kills it over a cap; what this process can catch itself it answers as a typed failure.

import ts from 'typescript';
import type { HarnessViolation } from '../agent/harness-contract';
import type { HarnessFailure } from '../agent/harness-runner';
import { compileHarness } from './compile';
import { preloadContractTypes, typecheckHarness } from './typecheck';
import type { CompileOutcome, TypeOutcome, ValidatorReply, ValidatorRequest } from './validator-protocol';
import { MAX_MESSAGE_CHARS, MAX_VIOLATIONS, limitViolation } from './validator-protocol';

function send(msg: ValidatorReply): void {
  process.send?.(msg);
}

/** Keeps what goes back bounded: a flood of errors, or one message quoting an enormous type. */
function bounded(violations: HarnessViolation[]): HarnessViolation[] {
  const cut = violations.slice(0, MAX_VIOLATIONS).map((v) => (v.message.length > MAX_MESSAGE_CHARS ? { ...v, message: `${v.message.slice(0, MAX_MESSAGE_CHARS)}... (cut)` } : v));
  if (violations.length > MAX_VIOLATIONS) cut.push({ where: cut[0].where, message: `and ${violations.length - MAX_VIOLATIONS} more violation(s) not listed` });
  return cut;
}

/** What a throw out of the compiler means for the source that caused it. */
function failureOf(e: unknown, stage: 'compiling' | 'type-checking', cpuBudgetMs: number): HarnessFailure {
  if (e instanceof ts.OperationCanceledException) {
    return { kind: 'timeout', reason: `${stage} used more than its ${cpuBudgetMs} ms CPU budget and was stopped: simplify the types (deep recursive conditional types, large tuple or template-literal types)` };
  }
  const msg = e instanceof Error ? e.message : String(e);
  if (e instanceof RangeError && /call stack/i.test(msg)) {
    return { kind: 'compile-error', reason: `the source is nested too deeply for the compiler (${msg} while ${stage}): flatten deep nesting (parentheses, brackets, else-if chains, nested templates or types)` };
  }
  if (e instanceof RangeError && /string length|array length|allocation/i.test(msg)) {
    return { kind: 'memory-limit', reason: `${stage} ran out of memory (${msg}): avoid types that build huge strings, tuples or unions` };
  }
  return { kind: 'compile-error', reason: `the TypeScript compiler failed on this source while ${stage} (${msg.slice(0, 300)}): simplify the construct at fault` };
}

/** The whole process's CPU, as the worker measures it (the checker's garbage makes GC threads use nearly as much). */
function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** A cancellation token the checker polls between declarations; reads the CPU at most every 20 ms. */
function cpuToken(budgetMs: number): ts.CancellationToken {
  const start = processCpuMs();
  let lastRead = performance.now();
  let over = false;
  const isCancellationRequested = () => {
    if (!over && performance.now() - lastRead >= 20) {
      lastRead = performance.now();
      over = processCpuMs() - start > budgetMs;
    }
    return over;
  };
  return {
    isCancellationRequested,
    throwIfCancellationRequested: () => {
      if (isCancellationRequested()) throw new ts.OperationCanceledException();
    },
  };
}

function compile(source: string): CompileOutcome {
  try {
    const compiled = compileHarness(source);
    return { ok: true, compiled: { ...compiled, violations: bounded(compiled.violations) } };
  } catch (e) {
    const failure = failureOf(e, 'compiling', 0);
    // harnessId is filled in by the worker, which hashes every source itself.
    return { ok: false, harnessId: '', failure, violations: [limitViolation(failure)] };
  }
}

function typecheck(source: string, cpuBudgetMs: number): TypeOutcome {
  try {
    return { ok: true, violations: bounded(typecheckHarness(source, cpuToken(cpuBudgetMs))) };
  } catch (e) {
    const failure = failureOf(e, 'type-checking', cpuBudgetMs);
    return { ok: false, failure, violations: [limitViolation(failure)] };
  }
}

process.on('message', (req: ValidatorRequest) => {
  const outcome = compile(req.source);
  const typeCheckFollows = req.typecheck && outcome.ok && !outcome.compiled.syntaxErrors;
  send({ type: 'compiled', id: req.id, outcome, typeCheckFollows });
  if (typeCheckFollows) send({ type: 'typed', id: req.id, outcome: typecheck(req.source, req.cpuBudgetMs) });
});

process.on('disconnect', () => process.exit(0));
// Parse and bind the contract and the lib once, before taking work: every check reuses them.
send({ type: 'ready', pid: process.pid, contractFiles: preloadContractTypes() });
