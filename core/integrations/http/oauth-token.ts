import type { UrlPolicy } from '../../platform/url-policy.js';
import { CrmError } from '../crm/clio.js';
import { guardedRequest, urlPolicyRefusal } from './guarded-http.js';

// One OAuth 2.0 token request (RFC 6749 §4.1.3, §6): a form POST to the provider's token endpoint
// under the URL policy, its answer's status and JSON object. What the answer means (tokens, a
// refused grant) is each provider's to judge (clio-oauth.ts, phone/ringcentral.ts).

export interface TokenAnswer {
  status: number;
  /** The answer's JSON object; {} when it was not one. */
  body: Record<string, unknown>;
}

/** POSTs `form` to `url`; an unreachable or disallowed endpoint is a CrmError naming `provider`. */
export async function postTokenRequest(
  url: string,
  form: Record<string, string>,
  options: { provider: string; baseWhat: string; policy: UrlPolicy; headers?: Record<string, string> },
): Promise<TokenAnswer> {
  let answer;
  try {
    answer = await guardedRequest(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        ...options.headers,
      },
      body: new URLSearchParams(form).toString(),
      policy: options.policy,
      timeoutMs: 20_000,
    });
  } catch (err) {
    const refused = urlPolicyRefusal(err);
    throw new CrmError(
      refused === null
        ? `${options.provider}'s token endpoint could not be reached: ${(err as Error).message}`
        : `The ${options.provider} ${options.baseWhat} is not allowed: ${refused.reason}`,
      refused !== null,
      false,
      null,
      { cause: err },
    );
  }
  return { status: answer.status, body: jsonObject(answer.body) };
}

/** A response body's JSON object; {} when it is not one. */
export function jsonObject(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
