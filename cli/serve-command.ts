// `whale serve <checkpoint>`: a project checkpoint behind an OpenAI-compatible API (serve/). Loopback only
// unless --host says otherwise, and then only with a bearer key (read from an environment variable, never a
// flag) or an explicit --insecure-no-auth.
import type { Command } from 'commander';
import * as path from 'node:path';
import { ModelRegistry } from '../serve/model-registry';
import { checkBind } from '../serve/http-guards';
import { startServer } from '../serve/server';
import { registerTrainExternalCommand } from './train-external-command';

interface ServeCliOptions {
  port: string;
  host: string;
  apiKeyEnv?: string;
  insecureNoAuth?: boolean;
  name?: string;
  store?: string;
  threads: string;
  maxBatchRows: string;
  maxLoaded: string;
  maxBodyBytes: string;
}

function positiveInt(name: string, value: string, min = 1): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  return n;
}

/** Registers `whale serve` and `whale train-external` (the scale-out commands). */
export function registerServeCommand(program: Command): void {
  registerTrainExternalCommand(program);
  program
    .command('serve')
    .description('serve a checkpoint over an OpenAI-compatible API (/v1/completions, /v1/chat/completions, /v1/models)')
    .argument('<checkpoint>', 'a WHALE checkpoint file (e.g. data/base-policies/math.ckpt or an artifact-store object)')
    .option('--port <n>', 'port (0 = any free port; the bound URL is printed)', '8000')
    .option('--host <addr>', 'address to bind; anything but loopback exposes the model to the network and needs --api-key-env (or --insecure-no-auth)', '127.0.0.1')
    .option('--api-key-env <VAR>', 'require `Authorization: Bearer <key>` with the key from this environment variable')
    .option('--insecure-no-auth', 'allow a non-loopback --host without an API key (anyone who reaches the address can use the model)')
    .option('--name <model>', 'model name for the checkpoint (default: the file name without extension)')
    .option('--store <dir>', 'artifact store directory: also serve any checkpoint in it as ckpt-<sha256>')
    .option('--threads <n>', 'sampler threads', '2')
    .option('--max-batch-rows <n>', 'rows decoded together, and the most sequences one request may ask for', '256')
    .option('--max-loaded <n>', 'checkpoints kept loaded at once', '2')
    .option('--max-body-bytes <n>', 'largest request body accepted (413 above it)', String(1 << 20))
    .action(async (file: string, o: ServeCliOptions) => {
      let apiKey: string | undefined;
      if (o.apiKeyEnv) {
        apiKey = process.env[o.apiKeyEnv];
        if (!apiKey) throw new Error(`--api-key-env ${o.apiKeyEnv}: that environment variable is not set (or empty); export it or drop the option`);
      }
      // Refused before the checkpoint loads: a misconfigured bind fails in a second, not after model start-up.
      checkBind(o.host, apiKey, o.insecureNoAuth ?? false);
      const maxBatchRows = positiveInt('max-batch-rows', o.maxBatchRows);
      const registry = new ModelRegistry({
        checkpointFile: path.resolve(file),
        name: o.name ?? path.basename(file).replace(/\.[^.]*$/, ''),
        storeDir: o.store ? path.resolve(o.store) : undefined,
        threads: positiveInt('threads', o.threads),
        maxBatchRows,
        maxLoaded: positiveInt('max-loaded', o.maxLoaded),
      });
      const model = await registry.start();
      const { server, url, warning } = await startServer({
        registry, host: o.host, port: positiveInt('port', o.port, 0), apiKey, insecureNoAuth: o.insecureNoAuth ?? false,
        maxBodyBytes: positiveInt('max-body-bytes', o.maxBodyBytes), maxRowsPerRequest: maxBatchRows,
        onEvent: (e) => {
          if (e.kind !== 'client-gone') return;
          const what = e.queued ? 'dropped before generation' : `stopped ${e.cancelledRows} of ${e.rows} rows after ${e.tokens} tokens`;
          process.stderr.write(`[whale] ${e.route}: client disconnected, ${what}\n`);
        },
      });
      process.stdout.write(`[whale] serving ${registry.defaultName} (${model.id}, context ${model.maxContext}) at ${url}/v1${apiKey ? ' (bearer key required)' : ''}\n${warning ? `${warning}\n` : ''}`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      server.close();
      server.closeAllConnections();
      await registry.close();
    });
}
