import {
  UrlNotAllowedError,
  assertResolvesToPublic,
  publicOnlyLookup,
  type UrlPolicy,
} from '../../platform/url-policy.js';
import { boundedRequest, HttpRequestError, type BoundedRequest, type HttpAnswer } from './bounded-http.js';

export { HttpRequestError } from './bounded-http.js';

// HTTP to URLs a firm chose (its Slack webhook, its CRM's base URL), under the URL policy
// (core/platform/url-policy.ts): the URL and its resolved addresses are checked just before
// the call, the socket connects only to an address the lookup checked, and redirects are never
// followed (a 3xx is an answer like any other). The exchange itself is boundedRequest's
// (bounded-http.ts): bodies bounded both ways, the whole exchange within its time limit.

export interface GuardedRequest extends Omit<BoundedRequest, 'lookup'> {
  policy: UrlPolicy;
}

export type GuardedResponse = HttpAnswer;

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
  const { policy, ...exchange } = options;
  return boundedRequest(target, { ...exchange, lookup: publicOnlyLookup(policy) });
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
