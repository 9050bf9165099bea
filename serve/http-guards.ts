// `whale serve`'s defences against hostile input before any route runs: the request target (origin- or
// absolute-form, bad percent-encoding), content types, requests node's parser refuses (answered in OpenAI's
// error shape on the raw socket), and the bind check that keeps an unauthenticated server off the network.
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError } from './openai-schema';

/**
 * The path of a request target. Origin-form (`/v1/models`) is read as is; absolute-form
 * (`http://host/v1/models`, which HTTP/1.1 servers must accept) contributes its path. Anything else
 * (`*`, `http://[/x`, an out-of-range port, a relative name) is a 400, never an exception.
 */
export function requestPath(target: string | undefined): string {
  const raw = target ?? '/';
  let url: URL;
  try {
    // Origin-form goes after a fixed origin, so `//x/y` stays the path `//x/y` (not host `x`).
    url = raw.startsWith('/') ? new URL(`http://localhost${raw}`) : new URL(raw);
  } catch {
    throw new ApiError(400, `the request target ${clip(raw)} is not a valid URL path: send a path such as /v1/completions`, 'invalid_request_error', null, 'invalid_request_target');
  }
  if (!raw.startsWith('/') && url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ApiError(400, `the request target ${clip(raw)} is neither a path nor an http(s) URL: send a path such as /v1/completions`, 'invalid_request_error', null, 'invalid_request_target');
  }
  return url.pathname;
}

/** A percent-encoded path segment (a model name); malformed encoding is the client's error (400), not ours. */
export function decodeSegment(segment: string, what: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ApiError(400, `the ${what} in the path, ${clip(segment)}, has malformed percent-encoding: encode it with encodeURIComponent`, 'invalid_request_error', what, 'invalid_path_encoding');
  }
}

/**
 * POST bodies must be JSON: an absent content type is read as JSON (as OpenAI's clients always send it),
 * any other type and any content encoding (gzip...) is a 415 saying what to send.
 */
export function checkJsonBody(req: IncomingMessage): void {
  const type = req.headers['content-type'];
  if (type !== undefined) {
    const mime = type.split(';')[0].trim().toLowerCase();
    if (mime !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(mime)) {
      throw new ApiError(415, `Content-Type ${clip(type)} is not supported: send the body as JSON with \`Content-Type: application/json\``, 'invalid_request_error', null, 'unsupported_media_type');
    }
  }
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new ApiError(415, `Content-Encoding ${clip(encoding)} is not supported: send the JSON body uncompressed`, 'invalid_request_error', null, 'unsupported_media_type');
  }
}

/** Strings from the request quoted in messages are cut, so a 1 MB name does not become a 1 MB error. */
export function clip(s: string, max = 120): string {
  return JSON.stringify(s.length > max ? `${s.slice(0, max)}...` : s);
}

const CLIENT_ERROR_STATUS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'the request headers are too large (node limits them to 16 KiB): send fewer or shorter headers'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request was not received in time'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'the chunk extensions of the body are too large'],
};

/**
 * The server's `clientError` handler: a request node's HTTP parser refuses (a bad request line, method or
 * header; headers over the limit; conflicting lengths) gets a 4xx in OpenAI's shape, written on the raw
 * socket (there is no response object), and only that connection closes.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex & { bytesWritten?: number }): void {
  if (err.code === 'ECONNRESET' || !socket.writable || (socket.bytesWritten ?? 0) > 0) {
    socket.destroy();
    return;
  }
  const [status, message] = CLIENT_ERROR_STATUS[err.code ?? ''] ?? [400, `the request is not valid HTTP/1.1 (${err.code ?? 'parse error'}: ${err.message})`];
  answerOnSocket(socket, new ApiError(status, message, 'invalid_request_error', null, 'bad_http_request'));
}

/** Writes an error response straight to a socket that has no response object, then closes it. */
export function answerOnSocket(socket: Duplex, err: ApiError): void {
  const body = JSON.stringify(err.body());
  socket.end(`HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  // A peer that never reads its answer must not keep the half-closed socket forever.
  setTimeout(() => socket.destroy(), 5_000).unref();
}

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127(\.\d{1,3}){3}$/.test(h);
}

/**
 * A server on a network address with no key answers anyone who can reach it: refused unless the operator
 * says so explicitly. Returns the warning to print when it is allowed anyway (null when there is none).
 */
export function checkBind(host: string, apiKey: string | undefined, insecureNoAuth: boolean): string | null {
  if (isLoopback(host)) return null;
  if (apiKey) return `[whale] warning: bound to ${host}, reachable from the network (bearer key required)`;
  if (!insecureNoAuth) {
    throw new Error(`--host ${host} exposes the model to the network and no API key is set: pass --api-key-env <VAR> (the key is read from that environment variable), or --insecure-no-auth to serve without a key anyway`);
  }
  return `[whale] warning: bound to ${host}, reachable from the network with NO API key (--insecure-no-auth): anyone who can reach this address can use the model`;
}
