// RingCentral's platform API, the calls the service makes (docs/ringcentral.md), typed with the
// definitions of RingCentral's own SDK (@rc-ex/core, types only). Every request goes through
// guardedRequest (URL policy at call time, no redirects). A 429 is waited out for its
// Retry-After (RingCentral's rate-limit groups answer it per group) and the same request sent
// again, bounded; a 401 is answered by one token renewal and the request sent again.
import type AddressBookSync from '@rc-ex/core/definitions/AddressBookSync';
import type CreateSubscriptionRequest from '@rc-ex/core/definitions/CreateSubscriptionRequest';
import type SubscriptionInfo from '@rc-ex/core/definitions/SubscriptionInfo';
import type TokenInfo from '@rc-ex/core/definitions/TokenInfo';
import { RateLimitedError, parseRetryAfter, withRetryAfter } from '../../platform/retry-after.js';
import type { UrlPolicy } from '../../platform/url-policy.js';
import { guardedRequest, urlPolicyRefusal, type GuardedResponse } from '../http/guarded-http.js';
import { jsonObject, postTokenRequest } from '../http/oauth-token.js';
import { CrmError } from '../crm/clio.js';

export const RINGCENTRAL_SERVERS = {
  production: 'https://platform.ringcentral.com',
  sandbox: 'https://platform.devtest.ringcentral.com',
} as const;

/** Contacts per address-book-sync page (RingCentral's maximum, and default, is 250). */
export const RC_SYNC_PAGE_SIZE = 250;

export interface RingCentralCredentials {
  clientId: string;
  clientSecret: string;
}

export interface RingCentralTokens {
  access_token: string;
  refresh_token: string;
  /** Seconds. */
  expires_in: number;
  refresh_token_expires_in: number | null;
}

/** RingCentral refused the grant (invalid_grant, invalid_client, ...): asking again cannot help. */
export class RingCentralGrantRefusedError extends Error {
  constructor(
    readonly error: string,
    readonly description: string | null,
  ) {
    super(
      `RingCentral refused the grant: ${error}${description === null ? '' : ` (${description.slice(0, 200)})`}.`,
    );
    this.name = 'RingCentralGrantRefusedError';
  }
}

/** The browser's destination for a firm's approval (authorization code flow with PKCE, S256). */
export function ringCentralAuthorizeUrl(
  base: string,
  clientId: string,
  redirectUri: string,
  state: string,
  codeChallenge: string,
): string {
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    state,
    code_challenge: codeChallenge,
    code_challenge_method: 'S256',
  });
  return `${base.replace(/\/+$/, '')}/restapi/oauth/authorize?${params}`;
}

/** POST <base>/restapi/oauth/token with one grant, the app's credentials as HTTP Basic. */
export async function requestRingCentralToken(
  base: string,
  grant:
    | { grant_type: 'authorization_code'; code: string; redirect_uri: string; code_verifier: string }
    | { grant_type: 'refresh_token'; refresh_token: string },
  credentials: RingCentralCredentials,
  policy: UrlPolicy,
): Promise<RingCentralTokens> {
  const answer = await postTokenRequest(`${base.replace(/\/+$/, '')}/restapi/oauth/token`, grant, {
    provider: 'RingCentral',
    baseWhat: 'server URL',
    policy,
    headers: {
      authorization: `Basic ${Buffer.from(`${credentials.clientId}:${credentials.clientSecret}`).toString('base64')}`,
    },
  });
  const body = answer.body as TokenInfo & { error?: unknown; error_description?: unknown };
  if (answer.status >= 200 && answer.status < 300) {
    if (typeof body.access_token !== 'string' || typeof body.refresh_token !== 'string') {
      throw new CrmError(
        `RingCentral's token answer (${answer.status}) had no tokens.`,
        false,
        false,
        answer.status,
      );
    }
    return {
      access_token: body.access_token,
      refresh_token: body.refresh_token,
      // RingCentral's access tokens last an hour; an answer without expires_in is taken as that.
      expires_in: typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600,
      refresh_token_expires_in:
        typeof body.refresh_token_expires_in === 'number' ? body.refresh_token_expires_in : null,
    };
  }
  if ((answer.status === 400 || answer.status === 401) && typeof body.error === 'string') {
    throw new RingCentralGrantRefusedError(
      body.error,
      typeof body.error_description === 'string' ? body.error_description : null,
    );
  }
  if (answer.status === 429) {
    throw new CrmError(`RingCentral's token endpoint answered 429; trying later.`, false, false, 429);
  }
  throw new CrmError(`RingCentral's token endpoint answered ${answer.status}.`, false, false, answer.status);
}

export interface RingCentralTokenSource {
  current(): Promise<string>;
  /** RingCentral answered 401 to `stale`: a token refreshed since (by this caller or another). */
  renew(stale: string): Promise<string>;
}

export interface RingCentralClientOptions {
  baseUrl: string;
  tokens: RingCentralTokenSource;
  policy: UrlPolicy;
  timeoutMs?: number;
  maxRateLimitWaits?: number;
  maxRateLimitWaitMs?: number;
}

/** One address-book-sync page, as the sync reads it. */
export interface AddressBookPage {
  records: NonNullable<AddressBookSync['records']>;
  syncToken: string | null;
  nextPageId: number | null;
  /** ISync: more changes wait than this page held. */
  more: boolean;
}

export class RingCentralClient {
  constructor(private readonly options: RingCentralClientOptions) {}

  private async call(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    payload?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const base = this.options.baseUrl.replace(/\/+$/, '');
    const once = async (token: string): Promise<GuardedResponse> => {
      try {
        return await guardedRequest(`${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            accept: 'application/json',
            ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
          policy: this.options.policy,
          timeoutMs: this.options.timeoutMs ?? 20_000,
          maxResponseBytes: 8 * 1024 * 1024,
        });
      } catch (err) {
        const refused = urlPolicyRefusal(err);
        throw new CrmError(
          refused === null
            ? `RingCentral could not be reached: ${(err as Error).message}`
            : `The RingCentral server URL is not allowed: ${refused.reason}`,
          refused !== null,
          false,
          null,
          { cause: err },
        );
      }
    };
    const attempt = async () => {
      let token = await this.options.tokens.current();
      let answer = await once(token);
      if (answer.status === 401) {
        token = await this.options.tokens.renew(token);
        answer = await once(token);
      }
      if (answer.status === 429) {
        throw new RateLimitedError(
          `RingCentral (rate-limit group ${answer.headers['x-rate-limit-group'] ?? 'unknown'})`,
          parseRetryAfter(answer.headers['retry-after'] ?? answer.headers['x-rate-limit-window']),
        );
      }
      return answer;
    };
    let answer: GuardedResponse;
    try {
      answer = await withRetryAfter(attempt, {
        maxWaits: this.options.maxRateLimitWaits ?? 3,
        maxWaitMs: this.options.maxRateLimitWaitMs ?? 65_000,
      });
    } catch (err) {
      if (err instanceof RateLimitedError) {
        throw new CrmError(`${err.message} Still limited after waiting; trying later.`, false, false, 429, {
          cause: err,
        });
      }
      throw err;
    }
    const body = jsonObject(answer.body);
    if (answer.status === 404 || (answer.status >= 200 && answer.status < 300))
      return { status: answer.status, body };
    const detail =
      typeof body.message === 'string' ? `: ${body.errorCode ?? ''} ${body.message}`.slice(0, 200) : '';
    throw new CrmError(
      `RingCentral answered ${answer.status} to ${method} ${path.split('?')[0]}${detail}`,
      answer.status === 400 || answer.status === 403,
      false,
      answer.status,
    );
  }

  /** One page of the logged-in extension's address book: FSync (pageId) or ISync (syncToken). */
  async addressBookPage(
    request: { syncType: 'FSync'; pageId: number | null } | { syncType: 'ISync'; syncToken: string },
  ): Promise<AddressBookPage> {
    const params = new URLSearchParams({ syncType: request.syncType, perPage: String(RC_SYNC_PAGE_SIZE) });
    if (request.syncType === 'FSync' && request.pageId !== null) params.set('pageId', String(request.pageId));
    if (request.syncType === 'ISync') params.set('syncToken', request.syncToken);
    const { status, body } = await this.call(
      'GET',
      `/restapi/v1.0/account/~/extension/~/address-book-sync?${params}`,
    );
    if (status === 404)
      throw new CrmError('RingCentral answered 404 to the address book sync.', true, false, 404);
    const page = body as AddressBookSync;
    return {
      records: Array.isArray(page.records) ? page.records : [],
      syncToken: typeof page.syncInfo?.syncToken === 'string' ? page.syncInfo.syncToken : null,
      nextPageId: typeof page.nextPageId === 'number' ? page.nextPageId : null,
      more: page.syncInfo?.olderRecordsExist === true,
    };
  }

  async createSubscription(request: CreateSubscriptionRequest): Promise<SubscriptionInfo> {
    const { status, body } = await this.call('POST', '/restapi/v1.0/subscription', request);
    if (status === 404)
      throw new CrmError('RingCentral answered 404 to a subscription create.', true, false, 404);
    return body as SubscriptionInfo;
  }

  /** The subscription, or null when RingCentral no longer has it. */
  async getSubscription(id: string): Promise<SubscriptionInfo | null> {
    const { status, body } = await this.call('GET', `/restapi/v1.0/subscription/${encodeURIComponent(id)}`);
    return status === 404 ? null : (body as SubscriptionInfo);
  }

  /** Renewed, or null when RingCentral no longer has it (it must be made again). */
  async renewSubscription(id: string): Promise<SubscriptionInfo | null> {
    const { status, body } = await this.call(
      'POST',
      `/restapi/v1.0/subscription/${encodeURIComponent(id)}/renew`,
    );
    return status === 404 ? null : (body as SubscriptionInfo);
  }

  async deleteSubscription(id: string): Promise<void> {
    await this.call('DELETE', `/restapi/v1.0/subscription/${encodeURIComponent(id)}`);
  }
}
