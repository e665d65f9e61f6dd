// The driver's HTTP client: every answer goes into the ledger; 429, 5xx and connection errors
// are retried after Retry-After (capped), as a well-behaved client does during an outage.
import type { Ledger } from './ledger.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** A JSON answer, read loosely (a non-JSON or empty answer is `{ text }`). */
export type JsonObject = Record<string, unknown>;

export interface Reply {
  status: number;
  body: JsonObject;
  headers: Headers;
}

export interface SendOptions {
  /** The route's name in the ledger (e.g. "POST create-outbound-call"). */
  route: string;
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  /** Give up retrying after this long (the last answer is returned). */
  retryForMs?: number;
  /** Statuses worth sending again (default 429, 502, 503, 504). */
  retryOn?: (status: number, body: JsonObject) => boolean;
  timeoutMs?: number;
}

export const defaultRetry = (status: number): boolean =>
  status === 429 || status === 502 || status === 503 || status === 504;

/** One request, no retries; a connection error is status 0. */
export async function sendOnce(
  ledger: Ledger | undefined,
  baseUrl: string,
  method: string,
  path: string,
  options: SendOptions,
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.Authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['Content-Type'] = 'application/json';
  }
  let reply: Reply;
  try {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
    });
    const text = await res.text();
    let parsed: JsonObject = { text };
    if ((res.headers.get('content-type') ?? '').includes('json') && text.length > 0) {
      try {
        const json: unknown = JSON.parse(text);
        parsed = typeof json === 'object' && json !== null ? (json as JsonObject) : { value: json };
      } catch {
        // not JSON after all: kept as text
      }
    }
    reply = { status: res.status, body: parsed, headers: res.headers };
  } catch (err) {
    reply = { status: 0, body: { error: { message: (err as Error).message } }, headers: new Headers() };
  }
  ledger?.answer(options.route, reply.status, reply.headers.get('retry-after'));
  return reply;
}

/** Sends until the answer is not worth retrying, or `retryForMs` has passed. */
export async function send(
  ledger: Ledger | undefined,
  baseUrl: string,
  method: string,
  path: string,
  options: SendOptions,
): Promise<Reply & { attempts: number }> {
  const retryOn = options.retryOn ?? defaultRetry;
  const until = Date.now() + (options.retryForMs ?? 10 * 60_000);
  for (let attempts = 1; ; attempts++) {
    const reply = await sendOnce(ledger, baseUrl, method, path, options);
    if ((reply.status !== 0 && !retryOn(reply.status, reply.body)) || Date.now() > until)
      return { ...reply, attempts };
    const after = Number(reply.headers.get('retry-after'));
    await sleep(Number.isFinite(after) && after > 0 ? Math.min(after, 5) * 1000 : 1000);
  }
}
