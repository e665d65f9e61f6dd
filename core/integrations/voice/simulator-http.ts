import { boundedRequest, type HttpAnswer } from '../http/bounded-http.js';
import { RETELL_SIGNATURE_HEADER, signRetellWebhook } from './webhook-signature.js';

// The simulator's requests to the service's own public call webhook and tools (PUBLIC_BASE_URL,
// which the operator set and which is usually loopback, so no URL policy applies): JSON, signed
// as Retell signs, through the bounded exchange every outgoing request uses (bounded-http.ts:
// node:http over kept-alive agents, the answer read up to 1 MiB, the whole exchange within
// `timeoutMs`, traced by the HTTP instrumentation so a delivery carries its call's trace).

/** POSTs `body` (JSON) to `url`, signed with `secret` (x-retell-signature). */
export function simulatorPost(
  url: string,
  body: string,
  secret: string,
  timeoutMs: number,
): Promise<HttpAnswer> {
  return boundedRequest(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      [RETELL_SIGNATURE_HEADER]: signRetellWebhook(body, secret),
    },
    body,
    timeoutMs,
  });
}
