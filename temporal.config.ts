// Connection, namespace, task queues, activity timeouts and retry policies, validated with zod.
// Every value has a default for the embedded dev server and an environment override (WHALE_*), read here
// only (workers and the CLI call loadTemporalConfig; workflows receive activity options as data).
import { z } from 'zod';

const Duration = z.string().regex(/^\d+(ms|s|m|h|d)$/, 'a duration such as "500ms", "30s", "10m", "2h" or "1d"');

export const RetryPolicySchema = z.object({
  initialInterval: Duration.default('2s'),
  backoffCoefficient: z.number().min(1).default(2),
  maximumInterval: Duration.default('1m'),
  /** 0 = unlimited: a preempted worker's activity waits for the next worker, however long. */
  maximumAttempts: z.number().int().min(0).default(0),
  nonRetryableErrorTypes: z.array(z.string()).default(['ConfigError', 'InvalidInput']),
});

export const ActivityTimeoutsSchema = z.object({
  /** Per attempt; long enough for the slowest step at the configured sizes. */
  startToCloseTimeout: Duration,
  /** A killed worker is noticed after this long; activities heartbeat well inside it. */
  heartbeatTimeout: Duration,
  retry: RetryPolicySchema.default(RetryPolicySchema.parse({})),
});
export type ActivityTimeouts = z.infer<typeof ActivityTimeoutsSchema>;

export const TemporalConfigSchema = z.object({
  address: z.string().min(1).default('127.0.0.1:7233'),
  namespace: z.string().min(1).default('default'),
  /** TLS and API key for a self-hosted cluster or Temporal Cloud; off for the dev server. */
  tls: z.boolean().default(false),
  apiKeyEnv: z.string().default('TEMPORAL_API_KEY'),
  /** Mutual TLS and custom CAs (self-hosted clusters, Temporal Cloud with certificates): PEM file paths; any of them turns TLS on. */
  tlsServerName: z.string().optional(),
  tlsCaCertPath: z.string().optional(),
  tlsClientCertPath: z.string().optional(),
  tlsClientKeyPath: z.string().optional(),
  taskQueues: z
    .object({
      orchestration: z.string().default('whale-orchestration'),
      model: z.string().default('whale-model'),
      proposer: z.string().default('whale-proposer'),
    })
    .prefault({}),
  devServer: z
    .object({
      ip: z.string().default('127.0.0.1'),
      port: z.number().int().min(1).max(65535).default(7233),
      uiPort: z.number().int().min(1).max(65535).default(8233),
      /** Project-local data folder: the SQLite database lives here and survives restarts. */
      dataDir: z.string().default('.data/temporal'),
      /** Namespace retention long enough to audit multi-day runs. */
      retention: Duration.default('720h'),
    })
    .prefault({}),
  activities: z
    .object({
      rollout: ActivityTimeoutsSchema.default({ startToCloseTimeout: '2h', heartbeatTimeout: '60s', retry: RetryPolicySchema.parse({}) }),
      fineTune: ActivityTimeoutsSchema.default({ startToCloseTimeout: '2h', heartbeatTimeout: '60s', retry: RetryPolicySchema.parse({}) }),
      evaluate: ActivityTimeoutsSchema.default({ startToCloseTimeout: '4h', heartbeatTimeout: '60s', retry: RetryPolicySchema.parse({}) }),
      propose: ActivityTimeoutsSchema.default({ startToCloseTimeout: '1h', heartbeatTimeout: '120s', retry: RetryPolicySchema.parse({}) }),
      validate: ActivityTimeoutsSchema.default({ startToCloseTimeout: '10m', heartbeatTimeout: '60s', retry: RetryPolicySchema.parse({}) }),
    })
    .prefault({}),
  worker: z
    .object({
      /** On SIGTERM in-flight activities get this long to heartbeat their cursor before cancellation. */
      shutdownGraceTime: Duration.default('30s'),
      modelConcurrency: z.number().int().min(1).default(1),
      proposerConcurrency: z.number().int().min(1).default(2),
    })
    .prefault({}),
  /** Shared artifact store directory (a network filesystem path for multi-machine workers). */
  artifactDir: z.string().default('.data/artifacts'),
});
export type TemporalConfig = z.infer<typeof TemporalConfigSchema>;

/** Environment variables that override config fields (documented in docs and `whale --help`). */
export const ENV_OVERRIDES: Record<string, string> = {
  WHALE_TEMPORAL_ADDRESS: 'address',
  WHALE_TEMPORAL_NAMESPACE: 'namespace',
  WHALE_TEMPORAL_TLS: 'tls',
  WHALE_TEMPORAL_API_KEY_ENV: 'apiKeyEnv',
  WHALE_TEMPORAL_TLS_SERVER_NAME: 'tlsServerName',
  WHALE_TEMPORAL_TLS_CA: 'tlsCaCertPath',
  WHALE_TEMPORAL_TLS_CERT: 'tlsClientCertPath',
  WHALE_TEMPORAL_TLS_KEY: 'tlsClientKeyPath',
  WHALE_QUEUE_ORCHESTRATION: 'taskQueues.orchestration',
  WHALE_QUEUE_MODEL: 'taskQueues.model',
  WHALE_QUEUE_PROPOSER: 'taskQueues.proposer',
  WHALE_DEV_PORT: 'devServer.port',
  WHALE_DEV_UI_PORT: 'devServer.uiPort',
  WHALE_DEV_DATA_DIR: 'devServer.dataDir',
  WHALE_ARTIFACT_DIR: 'artifactDir',
  WHALE_SHUTDOWN_GRACE: 'worker.shutdownGraceTime',
};

function setPath(obj: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let cur = obj;
  for (const k of keys.slice(0, -1)) {
    if (typeof cur[k] !== 'object' || cur[k] === null) cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[keys[keys.length - 1]] = value;
}

function coerce(raw: string): unknown {
  if (raw === 'true' || raw === 'false') return raw === 'true';
  if (/^-?\d+(\.\d+)?$/.test(raw)) return Number(raw);
  return raw;
}

/** Builds the config from defaults, an optional partial object, then environment overrides. */
export function loadTemporalConfig(partial: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = process.env): TemporalConfig {
  const merged: Record<string, unknown> = structuredClone(partial);
  for (const [name, dotted] of Object.entries(ENV_OVERRIDES)) {
    const raw = env[name];
    if (raw !== undefined && raw !== '') setPath(merged, dotted, coerce(raw));
  }
  const parsed = TemporalConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => {
      const field = i.path.join('.');
      const envName = Object.entries(ENV_OVERRIDES).find(([, d]) => d === field)?.[0];
      return `  ${field}: ${i.message}${envName ? ` (set by ${envName}?)` : ''}`;
    });
    throw new Error(`invalid Temporal configuration:\n${problems.join('\n')}`);
  }
  return parsed.data;
}

export default loadTemporalConfig;
