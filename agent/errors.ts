// Typed errors of the agent loop, split by whose fault (style rule 9): system faults are retryable
// (a broken backend, a corrupt file); a bad configuration is not and says what to fix.

/** A system fault: the model backend, an environment or a stored file misbehaved. Retryable. */
export class AgentSystemError extends Error {
  override readonly name = 'AgentSystemError';
  readonly retryable = true;
}

/** A caller configured the loop wrongly (bad sampling values, bad pool options). Not retryable. */
export class AgentConfigError extends Error {
  override readonly name = 'AgentConfigError';
  readonly retryable = false;
}
