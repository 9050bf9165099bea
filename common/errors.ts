// The root of WHALE's error classes: every error the project throws on purpose says whose fault it is, and
// the fault alone decides what Temporal does with it (docs/errors.md). No imports: the decision rules and
// the workflow bundle import this file, and both must stay free of Node and Temporal.

/**
 * Whose fault an error is.
 * - `user-input`: a config, command line, data file or request the user gave is wrong; the message says
 *   what to fix. Retrying the same input cannot help.
 * - `untrusted-code`: a harness or other code WHALE runs without trusting it broke a rule or crashed.
 *   Retrying the same code cannot help.
 * - `model-behaviour`: the model being trained produced something no later step can use. Sampling is seeded,
 *   so a retry of the same activity draws the same tokens: not retried.
 * - `system`: the machine, a worker, a server or a stored file misbehaved; a retry (maybe on another worker,
 *   maybe after an operator's fix) can succeed.
 * - `bug`: WHALE's own code broke one of its invariants (a decision rule got a value outside its domain).
 *   The same code gives the same answer, so it is not retried; the message says where.
 */
export type Fault = 'user-input' | 'untrusted-code' | 'model-behaviour' | 'system' | 'bug';

export const FAULTS: readonly Fault[] = ['user-input', 'untrusted-code', 'model-behaviour', 'system', 'bug'];

/** The faults whose failures Temporal retries. Only a system fault can go away on its own or by an operator's fix. */
export function isRetryableFault(fault: Fault): boolean {
  return fault === 'system';
}

/**
 * Base of every error class in WHALE. A subclass declares its `fault` (a constant, or per instance where one
 * class covers both, like an HTTP status) and its `name`, which becomes the failure type in Temporal
 * histories and `whale audit`: keep it equal to the class name.
 */
export abstract class WhaleError extends Error {
  abstract readonly fault: Fault;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** True for a WhaleError, also one from another copy of this module (a bundle, a child process's import). */
export function isWhaleError(err: unknown): err is WhaleError {
  if (err instanceof WhaleError) return true;
  const fault = (err as { fault?: unknown } | null)?.fault;
  return err instanceof Error && typeof fault === 'string' && (FAULTS as readonly string[]).includes(fault);
}

/** The fault of any thrown value: a WhaleError's own, `system` for everything else (nothing says otherwise). */
export function faultOf(err: unknown): Fault {
  return isWhaleError(err) ? err.fault : 'system';
}

/**
 * The run's input is wrong (an unknown domain, a base checkpoint the store lacks, proposer settings): the run
 * fails at once and the message says what to fix. Activities throw it through `configError`.
 */
export class ConfigError extends WhaleError {
  override readonly name = 'ConfigError';
  readonly fault = 'user-input';
}
