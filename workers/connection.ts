// Connections to Temporal for workers (NativeConnection) and clients (Connection), from temporal.config.ts.
// Environment variables and secrets are read here and in the CLI only.
import { Connection, Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../temporal.config';
import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';

function apiKey(config: TemporalConfig): string | undefined {
  const key = process.env[config.apiKeyEnv];
  return key && key.length > 0 ? key : undefined;
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

export async function connectWorker(config: TemporalConfig): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect({ address: config.address, tls: tlsOptions(config), apiKey: apiKey(config) });
  } catch (err) {
    throw new Error(`cannot reach the Temporal server at ${config.address}: ${(err as Error).message}. Start one with \`whale dev\`, or set WHALE_TEMPORAL_ADDRESS.`);
  }
}

export async function connectClient(config: TemporalConfig): Promise<Client> {
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: config.address, tls: tlsOptions(config), apiKey: apiKey(config), connectTimeout: '5s' });
  } catch (err) {
    throw new Error(`cannot reach the Temporal server at ${config.address}: ${(err as Error).message}. Start one with \`whale dev\`, or set WHALE_TEMPORAL_ADDRESS.`);
  }
  return new Client({ connection, namespace: config.namespace });
}
