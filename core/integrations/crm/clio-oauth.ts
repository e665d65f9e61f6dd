import type { UrlPolicy } from '../../platform/url-policy.js';
import { guardedRequest, type GuardedResponse } from '../http/guarded-http.js';
import { postTokenRequest } from '../http/oauth-token.js';
import { CrmError } from './clio.js';

// Clio Manage's OAuth 2.0 authorization-code flow (docs.developers.clio.com, "Authorization"):
// the browser goes to <base>/oauth/authorize?response_type=code&client_id=&redirect_uri=&state=,
// Clio sends it back to redirect_uri with ?code=&state=, and the code is exchanged at
// <base>/oauth/token (form-encoded POST: grant_type=authorization_code, client_id, client_secret,
// redirect_uri, code) for {access_token, token_type, expires_in, refresh_token}. Access tokens
// last about 30 days; grant_type=refresh_token (client_id, client_secret, refresh_token) gets a
// new one. A refused grant is 400 {"error": "invalid_grant", "error_description": ...}. Each
// region has its own host, and a token of one region is not valid in another.

export const CLIO_REGIONS = {
  us: 'https://app.clio.com',
  eu: 'https://eu.app.clio.com',
  ca: 'https://ca.app.clio.com',
  au: 'https://au.app.clio.com',
} as const;
export type ClioRegion = keyof typeof CLIO_REGIONS;

/** The region's base URL; a CLIO_BASE_URL other than the `us` default replaces every region. */
export function clioRegionBase(configuredBase: string, region: ClioRegion): string {
  const configured = configuredBase.replace(/\/+$/, '');
  return configured === CLIO_REGIONS.us ? CLIO_REGIONS[region] : configured;
}

export interface ClioClientCredentials {
  clientId: string;
  clientSecret: string;
}

export interface ClioGrantedTokens {
  access_token: string;
  /** Null when Clio kept the refresh token it had (Manage's refresh answers carry none). */
  refresh_token: string | null;
  expires_in: number;
}

/** Clio refused the grant itself (invalid_grant, invalid_client, ...): asking again cannot help. */
export class ClioGrantRefusedError extends Error {
  constructor(
    readonly error: string,
    readonly description: string | null,
  ) {
    super(
      `Clio refused the grant: ${error}${description === null ? '' : ` (${description.slice(0, 200)})`}.`,
    );
    this.name = 'ClioGrantRefusedError';
  }
}

/** The browser's destination for a firm's approval. */
export function clioAuthorizeUrl(base: string, clientId: string, redirectUri: string, state: string): string {
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    state,
  });
  return `${base}/oauth/authorize?${params}`;
}

/** POST <base>/oauth/token with one grant; throws ClioGrantRefusedError or CrmError. */
export async function requestClioToken(
  base: string,
  grant:
    | { grant_type: 'authorization_code'; code: string; redirect_uri: string }
    | { grant_type: 'refresh_token'; refresh_token: string },
  credentials: ClioClientCredentials,
  policy: UrlPolicy,
): Promise<ClioGrantedTokens> {
  const answer = await postTokenRequest(
    `${base}/oauth/token`,
    { ...grant, client_id: credentials.clientId, client_secret: credentials.clientSecret },
    { provider: 'Clio', baseWhat: 'base URL', policy },
  );
  const { body } = answer;
  if (answer.status >= 200 && answer.status < 300) {
    const { access_token, refresh_token, expires_in } = body;
    if (typeof access_token !== 'string' || access_token === '') {
      throw new CrmError(
        `Clio's token answer (${answer.status}) had no access_token.`,
        false,
        false,
        answer.status,
      );
    }
    return {
      access_token,
      refresh_token: typeof refresh_token === 'string' && refresh_token !== '' ? refresh_token : null,
      // Clio Manage tokens last 30 days; an answer without expires_in is taken as that.
      expires_in: typeof expires_in === 'number' && expires_in > 0 ? expires_in : 2_592_000,
    };
  }
  if ((answer.status === 400 || answer.status === 401) && typeof body.error === 'string') {
    throw new ClioGrantRefusedError(
      body.error,
      typeof body.error_description === 'string' ? body.error_description : null,
    );
  }
  throw new CrmError(`Clio's token endpoint answered ${answer.status}.`, false, false, answer.status);
}

/** Who Clio says a token's user is: the person and the Clio firm (account) they belong to. */
export interface ClioTokenHolder {
  id: number | null;
  name: string;
  email: string;
  /** The user's Clio firm (the account's name), when Clio gives it. */
  account: string | null;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

/**
 * GET <base>/api/v4/users/who_am_i.json (Clio's v4 document, "Return the data for the current
 * User"), asking for the name, email and `account{name}` (the firm's name: the document's User
 * description names that nested field). Throws CrmError when Clio does not answer with a user.
 */
export async function clioWhoAmI(
  base: string,
  accessToken: string,
  policy: UrlPolicy,
): Promise<ClioTokenHolder> {
  const params = new URLSearchParams({ fields: 'id,name,email,account{id,name}' });
  let answer: GuardedResponse;
  try {
    answer = await guardedRequest(`${base}/api/v4/users/who_am_i.json?${params}`, {
      method: 'GET',
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
      policy,
      timeoutMs: 20_000,
      maxResponseBytes: 64 * 1024,
    });
  } catch (err) {
    throw new CrmError(
      `Clio's who_am_i could not be reached: ${(err as Error).message}`,
      false,
      false,
      null,
      {
        cause: err,
      },
    );
  }
  let data: Record<string, unknown> | null = null;
  try {
    const parsed = JSON.parse(answer.body) as { data?: unknown };
    if (typeof parsed.data === 'object' && parsed.data !== null)
      data = parsed.data as Record<string, unknown>;
  } catch {
    // judged below
  }
  if (answer.status !== 200 || data === null) {
    throw new CrmError(
      `Clio's who_am_i answered ${answer.status} without a user.`,
      false,
      false,
      answer.status,
    );
  }
  const account =
    typeof data.account === 'object' && data.account !== null
      ? (data.account as Record<string, unknown>)
      : {};
  return {
    id: typeof data.id === 'number' ? data.id : null,
    name: text(data.name) ?? '(no name)',
    email: text(data.email) ?? '(no email)',
    account: text(account.name),
  };
}

/**
 * Ends a firm's grant at Clio: POST <base>/oauth/deauthorize with the access token as bearer and
 * as the form's `token` (Clio's "Deauthorization"; the grant's refresh token stops working too).
 * Throws CrmError when Clio does not answer 2xx (401: the token was no longer valid).
 */
export async function revokeClioToken(base: string, accessToken: string, policy: UrlPolicy): Promise<void> {
  let answer: GuardedResponse;
  try {
    answer = await guardedRequest(`${base}/oauth/deauthorize`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${accessToken}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: new URLSearchParams({ token: accessToken }).toString(),
      policy,
      timeoutMs: 20_000,
    });
  } catch (err) {
    throw new CrmError(
      `Clio's deauthorize endpoint could not be reached: ${(err as Error).message}`,
      false,
      false,
      null,
      {
        cause: err,
      },
    );
  }
  if (answer.status < 200 || answer.status >= 300) {
    throw new CrmError(`Clio's deauthorize endpoint answered ${answer.status}.`, false, false, answer.status);
  }
}
