// The small things every process harness here needs: the project root, a free port, and a poll with a
// deadline (the only way a harness waits for a state). tests/workflows/env.ts re-exports them for the tests.
import { createServer } from 'node:net';
import * as path from 'node:path';

export const ROOT = path.resolve(__dirname, '..');

/** Polls `check` every `intervalMs` until it returns a value (not undefined) or the deadline passes. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A TCP port that was free a moment ago, and whose successor (the UI port) is free too. */
export async function freePort(): Promise<number> {
  const tryPort = (port: number) => new Promise<number | null>((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(null));
    srv.listen(port, '127.0.0.1', () => {
      const got = (srv.address() as { port: number }).port;
      srv.close(() => resolve(got));
    });
  });
  for (;;) {
    const port = await tryPort(0);
    if (port && port < 65535 && (await tryPort(port + 1))) return port;
  }
}
