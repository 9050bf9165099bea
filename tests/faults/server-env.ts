// A real dev server for the fault tests that run their workers in-process: the project's own server start
// (cli/dev-server.ts, through testbed/fault-cluster.ts), which polls the server's health with a 60 s
// deadline, so a loaded machine does not fail the start (TestWorkflowEnvironment.createLocal allows 5 s).
import { NativeConnection } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { startFaultCluster } from '../../testbed/fault-cluster';

export interface ServerEnv {
  address: string;
  client: Client;
  nativeConnection: NativeConnection;
  teardown(): Promise<void>;
}

export async function startServerEnv(): Promise<ServerEnv> {
  const cluster = await startFaultCluster();
  const nativeConnection = await NativeConnection.connect({ address: cluster.config.address });
  return {
    address: cluster.config.address,
    client: cluster.client,
    nativeConnection,
    async teardown() {
      await nativeConnection.close();
      await cluster.client.connection.close();
      await cluster.teardown();
    },
  };
}
