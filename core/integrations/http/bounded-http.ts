import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';

// One HTTP exchange, bounded both ways: the whole exchange (connection to last byte) within a
// time limit, an answer read only up to its limit (then the answer is what was read, and the
// connection is dropped rather than drained), a signal that abandons it, and a failure that says
// whether the request may have reached the server. node:http over Node's kept-alive default
// agents: the HTTP instrumentation traces it (a `traceparent` goes with it when tracing is on).
// Two users: guardedRequest (guarded-http.ts) for URLs a firm chose, under the URL policy; and
// the simulator, for the service's own PUBLIC_BASE_URL, which the operator set and which is
// usually loopback (its call webhook and tools), so no policy applies to it.

export interface BoundedRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /** The whole exchange, connection to last byte (default 15 s). */
  timeoutMs?: number;
  /** Responses longer than this are cut off, the rest not read (default 1 MiB): we only read ids and errors. */
  maxResponseBytes?: number;
  /** Abandons the exchange (the request destroyed) when aborted; aborted already: nothing is sent. */
  signal?: AbortSignal;
  /** How the host's name is resolved (guardedRequest: only to addresses the URL policy allows). */
  lookup?: LookupFunction;
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * No answer came. `sent` tells whether the request may have reached the server: false when it
 * failed before the request was written (refused connection, DNS, URL policy), so a POST
 * certainly did nothing.
 */
export class HttpRequestError extends Error {
  constructor(
    message: string,
    readonly sent: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'HttpRequestError';
  }
}

function flatHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/** One HTTP exchange, bounded in time and in what is read of the answer. */
export function boundedRequest(url: string | URL, options: BoundedRequest): Promise<HttpAnswer> {
  const target = typeof url === 'string' ? new URL(url) : url;
  if (options.signal?.aborted) {
    return Promise.reject(
      new HttpRequestError(`${options.method} ${target.host}: abandoned before it was sent`, false, {
        cause: options.signal.reason,
      }),
    );
  }
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const limit = options.maxResponseBytes ?? 1024 * 1024;
  const timeoutMs = options.timeoutMs ?? 15_000;
  return new Promise<HttpAnswer>((resolve, reject) => {
    let written = false;
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(
        err instanceof HttpRequestError
          ? err
          : new HttpRequestError(`${options.method} ${target.host}: ${err.message}`, written, { cause: err }),
      );
    };
    const req = send(
      target,
      {
        method: options.method,
        headers: {
          ...options.headers,
          ...(options.body === undefined
            ? {}
            : { 'content-length': String(Buffer.byteLength(options.body)) }),
        },
        ...(options.lookup === undefined ? {} : { lookup: options.lookup }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const answered = () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            headers: flatHeaders(res.headers),
            body: Buffer.concat(chunks).toString('utf8').slice(0, limit),
          });
        };
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          chunks.push(chunk);
          // Enough read: the answer is what was read so far. The rest is not waited for (a body
          // that never ends would otherwise turn an answer into a timeout) and the connection
          // is dropped rather than drained.
          if (size >= limit) {
            answered();
            res.destroy();
          }
        });
        res.on('error', fail);
        res.on('end', answered);
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error(`no complete answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onAbort = () => req.destroy(new Error('abandoned', { cause: options.signal?.reason }));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('close', () => options.signal?.removeEventListener('abort', onAbort));
    req.on('error', fail);
    req.on('finish', () => (written = true));
    req.end(options.body);
  });
}
