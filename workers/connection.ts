// Connections to Temporal for workers (NativeConnection) and clients (Connection), from temporal.config.ts
// (which reads Temporal's profile file, TEMPORAL_* and WHALE_* variables, and the API key).
// Both SDK packages load when first used (`require`, not a top-level import): a CLI command that only needs a
// client never pays for @temporalio/worker, and `whale --help` or `--version` pays for neither.
import type { Connection, Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../temporal.config';
import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';

function apiKey(config: TemporalConfig): string | undefined {
  return config.apiKey && config.apiKey.length > 0 ? config.apiKey : undefined;
}

/**
 * TLS settings: off for the dev server; `tls: true` for a server with a public certificate (Temporal Cloud
 * with an API key); PEM files for a private CA or mutual TLS (both client files are needed together).
 */
export function tlsOptions(config: TemporalConfig): TLSConfig | undefined {
  const files = [config.tlsCaCertPath, config.tlsClientCertPath, config.tlsClientKeyPath, config.tlsServerName];
  if (!config.tls && files.every((f) => f === undefined)) return undefined;
  const read = (what: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`cannot read the Temporal TLS ${what} ${file}: ${(err as Error).message}`);
    }
  };
  if ((config.tlsClientCertPath === undefined) !== (config.tlsClientKeyPath === undefined)) {
    throw new Error('mutual TLS needs both a client certificate and its key: set tlsClientCertPath and tlsClientKeyPath (WHALE_TEMPORAL_TLS_CERT, WHALE_TEMPORAL_TLS_KEY) or neither');
  }
  return {
    ...(config.tlsServerName ? { serverNameOverride: config.tlsServerName } : {}),
    ...(config.tlsCaCertPath ? { serverRootCACertificate: read('CA certificate', config.tlsCaCertPath) } : {}),
    ...(config.tlsClientCertPath && config.tlsClientKeyPath ? { clientCertPair: { crt: read('client certificate', config.tlsClientCertPath), key: read('client key', config.tlsClientKeyPath) } } : {}),
  };
}

/** How long a worker waits for its server at start-up, and where it says what it waits for. */
export interface ConnectWait {
  /** Keep trying for this long (0: one attempt, as the CLI's client does). */
  timeoutMs: number;
  /** Who waits, for the log line (e.g. "model worker"). */
  who: string;
  log: (line: string) => void;
}

/** Errors of reaching the server (refused, reset, DNS, not up yet): worth another try while the server starts. */
const TRANSIENT = /transport|connect|refused|unavailable|dns|timed? ?out|deadline|reset|broken pipe|not yet|namespace .*not found/i;

/** Retries `attempt` with backoff (0.25 s doubling to 5 s) until it succeeds, the error is not transient, or time is up. */
export async function retryConnecting<T>(config: TemporalConfig, wait: ConnectWait | undefined, attempt: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const deadline = started + (wait?.timeoutMs ?? 0);
  let delayMs = 250;
  let lastLog = -Infinity;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      const message = (err as Error).message;
      const now = performance.now();
      if (!wait || now >= deadline || !TRANSIENT.test(message)) {
        const waited = wait && now - started >= 1000 ? ` (waited ${Math.round((now - started) / 1000)} s; --connect-timeout-ms or WHALE_WORKER_CONNECT_TIMEOUT_MS sets how long)` : '';
        throw new Error(`cannot reach the Temporal server at ${config.address} (namespace ${config.namespace}): ${message}${waited}. Start one with \`whale dev\`, or set TEMPORAL_ADDRESS (or WHALE_TEMPORAL_ADDRESS, which overrides it).`, { cause: err });
      }
      // Said at once and then every 10 s, so a supervisor's log shows what the worker waits for.
      if (now - lastLog >= 10_000) {
        lastLog = now;
        wait.log(`[whale] ${wait.who} waiting for the Temporal server at ${config.address} (namespace ${config.namespace}): ${message.split('\n')[0].slice(0, 200)}; retrying for up to ${Math.ceil((deadline - now) / 1000)} s more`);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(delayMs, deadline - now)));
      delayMs = Math.min(delayMs * 2, 5_000);
    }
  }
}

/** A worker's connection; with `wait`, it retries while the server is not up yet (a worker started before it). */
export async function connectWorker(config: TemporalConfig, wait?: ConnectWait): Promise<NativeConnection> {
  const tls = tlsOptions(config);
  const { NativeConnection } = require('@temporalio/worker') as typeof import('@temporalio/worker');
  return retryConnecting(config, wait, () => NativeConnection.connect({ address: config.address, tls, apiKey: apiKey(config) }));
}

export async function connectClient(config: TemporalConfig): Promise<Client> {
  const { Connection, Client } = require('@temporalio/client') as typeof import('@temporalio/client');
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: config.address, tls: tlsOptions(config), apiKey: apiKey(config), connectTimeout: '5s' });
  } catch (err) {
    throw new Error(`cannot reach the Temporal server at ${config.address}: ${(err as Error).message}. Start one with \`whale dev\`, or set TEMPORAL_ADDRESS (or WHALE_TEMPORAL_ADDRESS, which overrides it).`);
  }
  return new Client({ connection, namespace: config.namespace });
}
