import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import {
  UrlNotAllowedError,
  assertResolvesToPublic,
  publicOnlyLookup,
  type UrlPolicy,
} from '../../platform/url-policy.js';

// HTTP to URLs a firm chose (its Slack webhook, its CRM's base URL), under the URL policy
// (core/platform/url-policy.ts): the URL and its resolved addresses are checked just before
// the call, the socket connects only to an address the lookup checked, and redirects are never
// followed (a 3xx is an answer like any other). Bodies are bounded both ways.

export interface GuardedRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  policy: UrlPolicy;
  /** The whole exchange, connection to last byte (default 15 s). */
  timeoutMs?: number;
  /** Responses longer than this are cut off, the rest not read (default 1 MiB): we only read ids and errors. */
  maxResponseBytes?: number;
  /** Abandons the exchange (the request destroyed) when aborted; aborted already: nothing is sent. */
  signal?: AbortSignal;
}

export interface GuardedResponse {
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

/** One HTTP exchange with a firm-chosen URL, the URL policy applied at call time. */
export async function guardedRequest(url: string, options: GuardedRequest): Promise<GuardedResponse> {
  const target = new URL(url);
  try {
    await assertResolvesToPublic(url, options.policy);
  } catch (err) {
    // A name that does not resolve is a failure to reach the server, like a refused connection:
    // callers map HttpRequestError (for example to 502), not a raw getaddrinfo error (500).
    if (err instanceof UrlNotAllowedError) throw err;
    throw new HttpRequestError(`${options.method} ${target.host}: ${(err as Error).message}`, false, {
      cause: err,
    });
  }
  if (options.signal?.aborted) {
    throw new HttpRequestError(`${options.method} ${target.host}: abandoned before it was sent`, false, {
      cause: options.signal.reason,
    });
  }
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const limit = options.maxResponseBytes ?? 1024 * 1024;
  const timeoutMs = options.timeoutMs ?? 15_000;
  return new Promise<GuardedResponse>((resolve, reject) => {
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
        lookup: publicOnlyLookup(options.policy),
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

/** The subset of the fetch Response that clients taking a `fetch` option read. */
export interface GuardedFetchResponse {
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
  readonly url: string;
  readonly headers: Headers;
  arrayBuffer(): Promise<ArrayBuffer>;
  json(): Promise<unknown>;
  text(): Promise<string>;
}

/**
 * A `fetch` for SDKs that accept one (@slack/webhook), going through guardedRequest. `observe`
 * sees every raw answer, for what the SDK's errors leave out (a 429's Retry-After).
 */
export function guardedFetch(
  policy: UrlPolicy,
  timeoutMs: number,
  observe: (response: GuardedResponse) => void = () => {},
  signal?: AbortSignal,
) {
  return async (
    url: string | URL,
    init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
  ): Promise<GuardedFetchResponse> => {
    const method = (init.method ?? 'GET').toUpperCase() as GuardedRequest['method'];
    const answer = await guardedRequest(String(url), {
      method,
      ...(init.headers === undefined ? {} : { headers: init.headers }),
      ...(typeof init.body === 'string' ? { body: init.body } : {}),
      policy,
      timeoutMs,
      ...(signal === undefined ? {} : { signal }),
    });
    observe(answer);
    const empty = answer.status === 204 || answer.status === 205 || answer.status === 304;
    return new Response(empty ? null : answer.body, { status: answer.status, headers: answer.headers });
  };
}

/** The URL policy's refusal somewhere in an error's cause chain (SDKs wrap our errors). */
export function urlPolicyRefusal(err: unknown): UrlNotAllowedError | null {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e instanceof UrlNotAllowedError) return e;
    e = (e as { original?: unknown }).original ?? e.cause;
  }
  return null;
}

/** Whether the request may have reached the server, judged from an error's cause chain. */
export function requestMayHaveBeenSent(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e instanceof HttpRequestError) return e.sent;
    e = (e as { original?: unknown }).original ?? e.cause;
  }
  return true;
}
