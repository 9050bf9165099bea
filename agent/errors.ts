// Typed errors of the agent loop, split by whose fault: a system fault is retried (a broken backend, a
// corrupt file); a bad configuration is not, and its message says what to fix.
import { WhaleError } from '../common/errors';

/** A system fault: the model backend, an environment or a stored file misbehaved. Retried. */
export class AgentSystemError extends WhaleError {
  override readonly name = 'AgentSystemError';
  readonly fault = 'system';
}

/** A caller configured the loop wrongly (bad sampling values, bad pool options). Not retried. */
export class AgentConfigError extends WhaleError {
  override readonly name = 'AgentConfigError';
  readonly fault = 'user-input';
}
