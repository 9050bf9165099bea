// The system-owned rollout limits (new tokens per model turn, tokens per episode) of rollouts, evaluations
// and pretraining demonstrations; a module of its own so a model worker reads them without the corpus code.

/** System-owned rollout limits used by rollouts, evaluations, pretraining demonstrations and the headroom report. */
export const ROLLOUT_LIMITS = { maxNewTokensPerTurn: 96, maxEpisodeTokens: 400 } as const;
