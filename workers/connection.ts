// Connections to Temporal for workers (NativeConnection) and clients (Connection), from temporal.config.ts.
// Environment variables and secrets are read here and in the CLI only.
import { Connection, Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../temporal.config';

function apiKey(config: TemporalConfig): string | undefined {
  const key = process.env[config.apiKeyEnv];
  return key && key.length > 0 ? key : undefined;
}

export async function connectWorker(config: TemporalConfig): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect({ address: config.address, tls: config.tls || undefined, apiKey: apiKey(config) });
  } catch (err) {
    throw new Error(`cannot reach the Temporal server at ${config.address}: ${(err as Error).message}. Start one with \`whale dev\`, or set WHALE_TEMPORAL_ADDRESS.`);
  }
}

export async function connectClient(config: TemporalConfig): Promise<Client> {
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: config.address, tls: config.tls || undefined, apiKey: apiKey(config), connectTimeout: '5s' });
  } catch (err) {
    throw new Error(`cannot reach the Temporal server at ${config.address}: ${(err as Error).message}. Start one with \`whale dev\`, or set WHALE_TEMPORAL_ADDRESS.`);
  }
  return new Client({ connection, namespace: config.namespace });
}
