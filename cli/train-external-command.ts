// `whale train-external`: the project's trainer speaking the external-trainer protocol
// (backends/trainer-protocol.ts, docs/scale-out.md). One request on stdin (or --request), the response as
// one JSON line on stdout, progress on stderr; exit 2 when the request is at fault. With --port it answers
// POST /train over HTTP instead (one step at a time), for trainers on another machine.
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { parseTrainRequest, trainFromRequest, TrainRequestError } from '../backends/project-trainer';

interface TrainExternalOptions {
  request?: string;
  threads: string;
  port?: string;
  host: string;
  apiKeyEnv?: string;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new TrainRequestError(`${where} is not JSON: ${(err as Error).message}`);
  }
}

export function registerTrainExternalCommand(program: Command): void {
  program
    .command('train-external')
    .description('train one fine-tune step from a whale-external-trainer/2 (or /1) request (stdin, --request, or HTTP with --port)')
    .option('--request <file>', 'read the request from a file instead of stdin')
    .option('--threads <n>', 'trainer threads when the request is not deterministic', '2')
    .option('--port <n>', 'serve POST /train on this port instead of reading one request')
    .option('--host <addr>', 'address to bind with --port', '127.0.0.1')
    .option('--api-key-env <VAR>', 'with --port: require `Authorization: Bearer <key>` with the key from this variable')
    .action(async (o: TrainExternalOptions) => {
      const threads = Math.max(1, Number(o.threads) || 1);
      const log = (line: string) => process.stderr.write(line + '\n');
      if (o.port === undefined) {
        try {
          const text = o.request ? readFileSync(o.request, 'utf8') : await readStdin();
          const response = await trainFromRequest(parseTrainRequest(parseJson(text, o.request ?? 'stdin')), { threads, log });
          process.stdout.write(JSON.stringify(response) + '\n');
        } catch (err) {
          process.stderr.write(`[train-external] ${(err as Error).message}\n`);
          process.exitCode = err instanceof TrainRequestError ? 2 : 1;
        }
        return;
      }
      const key = o.apiKeyEnv ? process.env[o.apiKeyEnv] : undefined;
      if (o.apiKeyEnv && !key) throw new Error(`--api-key-env ${o.apiKeyEnv}: that environment variable is not set`);
      let queue: Promise<unknown> = Promise.resolve();
      const server = createServer((req, res) => {
        const reply = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (req.method !== 'POST' || req.url !== '/train') return reply(404, { error: { message: 'POST /train only', type: 'invalid_request_error', param: null, code: 'unknown_url' } });
        const given = Buffer.from((req.headers.authorization ?? '').replace(/^Bearer /, ''));
        if (key && (given.length !== Buffer.byteLength(key) || !timingSafeEqual(given, Buffer.from(key)))) return reply(401, { error: { message: 'missing or wrong bearer key', type: 'authentication_error', param: null, code: 'invalid_api_key' } });
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          // One step at a time: a trainer owns the machine's cores.
          queue = queue.then(async () => {
            try {
              reply(200, await trainFromRequest(parseTrainRequest(parseJson(Buffer.concat(chunks).toString('utf8'), 'the request body')), { threads, log }));
            } catch (err) {
              const bad = err instanceof TrainRequestError;
              reply(bad ? 400 : 500, { error: { message: (err as Error).message, type: bad ? 'invalid_request_error' : 'server_error', param: null, code: null } });
            }
          });
        });
      });
      await new Promise<void>((resolve) => server.listen(Number(o.port), o.host, resolve));
      process.stdout.write(`[whale] external trainer at http://${o.host}:${(server.address() as AddressInfo).port}/train\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      server.close();
    });
}
