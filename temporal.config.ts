// Where the workers and the CLI connect (address, namespace, TLS), the task queues, and the local processes
// (dev server, workers, artifact store), validated with zod. Every value has a default for the embedded dev
// server; the connection also comes from Temporal's own profile file and TEMPORAL_* variables
// (@temporalio/envconfig), and WHALE_* variables override both. How activities run (timeouts, retry
// policies) is not here: it is the run config's `execution` block, the one place a workflow can read it.
import { z } from 'zod';
import { loadClientConfigProfile, type ClientConfigProfile, type ConfigDataSource } from '@temporalio/envconfig';

const Duration = z.string().regex(/^\d+(ms|s|m|h|d)$/, 'a duration such as "500ms", "30s", "10m", "2h" or "1d"');

export const TemporalConfigSchema = z.object({
  address: z.string().min(1).describe('Temporal frontend address (host:port)').default('127.0.0.1:7233'),
  namespace: z.string().min(1).describe('Temporal namespace of the runs').default('default'),
  /** TLS and API key for a self-hosted cluster or Temporal Cloud; off for the dev server. */
  tls: z.boolean().describe('Connect with TLS (a self-hosted cluster or Temporal Cloud); off for the dev server').default(false),
  apiKeyEnv: z.string().describe('Name of the environment variable holding a Temporal API key (never the key itself)').default('TEMPORAL_API_KEY'),
  /** Filled by loadTemporalConfig from the variable named by apiKeyEnv, else the profile's api_key; never logged. */
  apiKey: z.string().describe('The API key itself: from the variable named by apiKeyEnv, else the temporal.toml profile\'s api_key (never set it in code or print it)').optional(),
  /** Mutual TLS and custom CAs (self-hosted clusters, Temporal Cloud with certificates): PEM file paths; any of them turns TLS on. */
  tlsServerName: z.string().describe('TLS server name override; setting it turns TLS on').optional(),
  tlsCaCertPath: z.string().describe('PEM file of a custom CA; setting it turns TLS on (unit: file path)').optional(),
  tlsClientCertPath: z.string().describe('PEM client certificate for mutual TLS; setting it turns TLS on (unit: file path)').optional(),
  tlsClientKeyPath: z.string().describe('PEM client key for mutual TLS; setting it turns TLS on (unit: file path)').optional(),
  taskQueues: z
    .object({
      orchestration: z.string().describe('Task queue of the orchestration worker (workflows)').default('whale-orchestration'),
      model: z.string().describe('Task queue of the model worker').default('whale-model'),
      proposer: z.string().describe('Task queue of the proposer worker').default('whale-proposer'),
    })
    .describe('Task queue names')
    .prefault({}),
  devServer: z
    .object({
      ip: z.string().describe('Address `whale dev` binds the dev server to').default('127.0.0.1'),
      port: z.number().int().min(1).max(65535).describe('Port of the dev server\'s frontend (unit: TCP port)').default(7233),
      uiPort: z.number().int().min(1).max(65535).describe('Port of the dev server\'s Web UI (unit: TCP port)').default(8233),
      /** Project-local data folder: the SQLite database lives here and survives restarts. */
      dataDir: z.string().describe('Project-local data folder: the SQLite database lives here and survives restarts (unit: directory, relative to the project)').default('.data/temporal'),
      /** Namespace retention long enough to audit multi-day runs. */
      retention: Duration.describe('Namespace retention `whale dev` sets: closed runs stay auditable (and their artifacts kept by whale gc) this long (unit: duration string)').default('720h'),
    })
    .describe('The dev server `whale dev` starts')
    .prefault({}),
  worker: z
    .object({
      /** On SIGTERM in-flight activities get this long to heartbeat their cursor before cancellation. */
      shutdownGraceTime: Duration.describe('On SIGTERM in-flight activities get this long to heartbeat their cursor before cancellation (unit: duration string)').default('30s'),
      modelConcurrency: z.number().int().min(1).describe('Activities one model worker runs at once (unit: activities)').default(1),
      proposerConcurrency: z.number().int().min(1).describe('Activities one proposer worker runs at once (unit: activities)').default(2),
    })
    .describe('Worker processes')
    .prefault({}),
  /** Shared artifact store directory (a network filesystem path for multi-machine workers). */
  artifactDir: z.string().describe('Shared artifact store directory (a network filesystem path for multi-machine workers) (unit: directory, relative to the project)').default('.data/artifacts'),
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

/**
 * Temporal's standard connection settings (what the `temporal` CLI and every SDK read): the profile
 * (TEMPORAL_PROFILE, default "default") of the TOML file at TEMPORAL_CONFIG_FILE or
 * ~/.config/temporalio/temporal.toml, with TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
 * TEMPORAL_TLS and TEMPORAL_TLS_* over it. Returned as config fields, which WHALE_* variables then override.
 */
export function temporalProfileFields(env: NodeJS.ProcessEnv): Record<string, unknown> {
  let profile: ClientConfigProfile;
  const file = env.TEMPORAL_CONFIG_FILE ?? '~/.config/temporalio/temporal.toml';
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: env as Record<string, string> });
  } catch (err) {
    throw new Error(`cannot read the Temporal connection profile${env.TEMPORAL_PROFILE ? ` '${env.TEMPORAL_PROFILE}'` : ''} from ${file}: ${(err as Error).message}. Fix the file (or TEMPORAL_CONFIG_FILE / TEMPORAL_PROFILE), or unset them and use TEMPORAL_ADDRESS / WHALE_TEMPORAL_ADDRESS`);
  }
  const out: Record<string, unknown> = {};
  if (profile.address) out.address = profile.address;
  if (profile.namespace) out.namespace = profile.namespace;
  if (profile.apiKey) out.apiKey = profile.apiKey;
  const tls = profile.tls;
  if (tls) {
    // A file path only: the project passes TLS material as files (inline *_data values would be secrets in a config).
    const filePath = (what: string, source: ConfigDataSource | undefined): string | undefined => {
      if (source === undefined) return undefined;
      if ('path' in source) return source.path;
      throw new Error(`the Temporal connection profile in ${file} (or TEMPORAL_TLS_*_DATA) gives the TLS ${what} inline; this project reads TLS material from files: use ${what.replace(/ /g, '_')}_path (TEMPORAL_TLS_${what.toUpperCase().replace(/ /g, '_')}_PATH) instead`);
    };
    out.tls = tls.disabled !== true;
    if (tls.disabled !== true) {
      if (tls.serverName) out.tlsServerName = tls.serverName;
      const ca = filePath('server ca cert', tls.serverCACert);
      const cert = filePath('client cert', tls.clientCert);
      const key = filePath('client key', tls.clientKey);
      if (ca) out.tlsCaCertPath = ca;
      if (cert) out.tlsClientCertPath = cert;
      if (key) out.tlsClientKeyPath = key;
    }
  }
  return out;
}

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

/**
 * Builds the config: defaults, then Temporal's profile and TEMPORAL_* variables (connection fields), then an
 * optional partial object (tests), then WHALE_* overrides. The API key comes from the variable apiKeyEnv
 * names, else from the profile.
 */
export function loadTemporalConfig(partial: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = process.env): TemporalConfig {
  const merged: Record<string, unknown> = { ...temporalProfileFields(env), ...structuredClone(partial) };
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
  const key = env[parsed.data.apiKeyEnv];
  return key ? { ...parsed.data, apiKey: key } : parsed.data;
}

export default loadTemporalConfig;
