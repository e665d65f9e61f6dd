// A small stand-in for RingCentral's platform API on 127.0.0.1 that judges every request our
// client sends by RingCentral's own OpenAPI document (test/fakes/spec/ringcentral.json, derived
// by `npm run providers:derive` from rc-platform.yml, checked with test/fakes/spec/openapi-spec.ts)
// and refuses, as RingCentral does, what the document does not allow: an operation it does not
// have (404 CMN-102), a query parameter it does not name or a value off its schema (400
// CMN-101), a JSON body off the requestBody schema (400), a form field of /restapi/oauth/token it
// does not name (400 invalid_request). Its answers are built to the document's response schemas
// and checked against them; an answer off the document is recorded in `violations`, and close()
// rejects with them, failing the test.
//
// OAuth as RingCentral documents it ("Authorization code flow" with PKCE): GET
// /restapi/oauth/authorize (response_type=code, client_id, redirect_uri, state, code_challenge,
// code_challenge_method=S256) sends the browser back to redirect_uri with ?code=&state= (the
// user's approval taken as given); POST /restapi/oauth/token, form-encoded, the app's
// credentials as HTTP Basic, takes grant_type=authorization_code (code, redirect_uri,
// code_verifier: its S256 must be the challenge) or grant_type=refresh_token and answers
// TokenInfo; a refused grant is 400 {"error": "invalid_grant", ...}, wrong credentials 401
// invalid_client. Access tokens expire after `oauth.expiresIn` seconds (the API answers 401
// TokenInvalid), and a refresh rotates the refresh token (the old one stops working).
//
// Address book sync (`syncType=FSync|ISync`, `syncToken`, `perPage` ≤ 250, `pageId`): FSync
// pages through the live contacts by id; its syncToken stands for the change sequence when the
// page was read; ISync answers the changes after a token (deletions as `availability:
// "Deleted"`), at most perPage of them, with the token of the last one answered.
//
// Rate limits: each operation has its throttling group (`x-throttling-group` in the document:
// Heavy, Medium, Light, Auth); a `failNext` 429 answers as RingCentral does (CMN-301, Retry-After,
// X-Rate-Limit-Group/-Limit/-Remaining/-Window).
//
// Subscriptions (WebHook transport): a create is checked by POSTing to the address with a
// `Validation-Token` header, which the address must echo in a 200 (else 400 SUB-523, nothing
// made); a subscription lives `expiresIn` seconds (capped by `maxSubscriptionSeconds`), renew
// starts that again, an expired or dropped one is 404. `deliver` posts an event to every live
// subscription with the `Verification-Token` it was created with.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type AddressBookSync from '@rc-ex/core/definitions/AddressBookSync';
import type ExtensionTelephonySessionsEvent from '@rc-ex/core/definitions/ExtensionTelephonySessionsEvent';
import type PersonalContactResource from '@rc-ex/core/definitions/PersonalContactResource';
import type SubscriptionInfo from '@rc-ex/core/definitions/SubscriptionInfo';
import type TokenInfo from '@rc-ex/core/definitions/TokenInfo';
import { loadSpec, SpecViolations } from './spec/openapi-spec.js';

export interface RcRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  form: Record<string, string> | null;
  body: unknown;
}

/** A contact as RingCentral keeps it, with the change sequence of its last change. */
export interface FakeRcContact {
  id: number;
  firstName?: string;
  lastName?: string;
  email?: string;
  company?: string;
  mobilePhone?: string;
  businessPhone?: string;
  homePhone?: string;
  availability: 'Alive' | 'Deleted';
  seq: number;
}

export interface RcFailure {
  status: 429 | 500 | 503;
  /** Only requests to this path (e.g. /restapi/v1.0/account/~/extension/~/address-book-sync). */
  path?: string;
  retryAfter?: string;
}

export interface FakeRcSubscription {
  id: string;
  eventFilters: string[];
  address: string;
  verificationToken: string | undefined;
  createdAt: number;
  expiresAt: number;
}

export interface FakeRingCentral {
  url: string;
  oauth: {
    clientId: string;
    clientSecret: string;
    /** Lifetime in seconds of access tokens issued from now on (RingCentral's is 3600). */
    expiresIn: number;
    tokenRequests: Array<Record<string, string>>;
    accessTokens: Map<string, number>;
    refreshTokens: Set<string>;
    refreshCount(): number;
    expireAccessTokens(): void;
    revokeRefreshTokens(): void;
    /** Answer the next token request 401 invalid_client (the app's credentials revoked). */
    refuseClient: boolean;
  };
  contacts: Map<number, FakeRcContact>;
  addContact(c: Omit<FakeRcContact, 'seq' | 'availability'>): FakeRcContact;
  updateContact(id: number, patch: Partial<FakeRcContact>): void;
  deleteContact(id: number): void;
  requests: RcRequest[];
  violations: SpecViolations;
  failNext: RcFailure[];
  subscriptions: Map<string, FakeRcSubscription>;
  /** The longest a subscription lives, in seconds (RingCentral's webhook default is 7 days). */
  maxSubscriptionSeconds: number;
  /** RingCentral drops a subscription (blacklisted, expired on its side): it is 404 from now on. */
  dropSubscriptions(): void;
  /** Posts an event to every live subscription; the statuses its address answered. */
  deliver(
    build: (sub: FakeRcSubscription) => unknown,
    headers?: (sub: FakeRcSubscription) => Record<string, string>,
  ): Promise<number[]>;
  close(): Promise<void>;
}

export const RC_ACCOUNT_ID = '37439510';
export const RC_EXTENSION_ID = '1464460004';

/** A missed inbound call as RingCentral's telephony sessions notification carries it. */
export function missedCallEvent(
  sub: Pick<FakeRcSubscription, 'id'>,
  call: {
    from: string;
    to: string;
    sessionId?: string;
    status?: 'Disconnected' | 'VoiceMail' | 'Answered';
    /** When the call's state changed (default now). */
    at?: Date;
  },
): ExtensionTelephonySessionsEvent {
  const sessionId = call.sessionId ?? `s-${randomBytes(6).toString('hex')}`;
  const missed = (call.status ?? 'Disconnected') !== 'Answered';
  const at = (call.at ?? new Date()).toISOString();
  return {
    uuid: randomUUID(),
    event: `/restapi/v1.0/account/${RC_ACCOUNT_ID}/extension/${RC_EXTENSION_ID}/telephony/sessions`,
    timestamp: at,
    subscriptionId: sub.id,
    ownerId: RC_EXTENSION_ID,
    body: {
      sequence: 7,
      sessionId: String(Math.floor(Math.random() * 1e9)),
      telephonySessionId: sessionId,
      serverId: '10.13.121.43.TAM',
      eventTime: at,
      origin: { type: 'Call' },
      parties: [
        {
          accountId: RC_ACCOUNT_ID,
          extensionId: RC_EXTENSION_ID,
          id: `p-${sessionId}-1`,
          direction: 'Inbound',
          to: { phoneNumber: call.to, name: 'Front desk', extensionId: RC_EXTENSION_ID },
          from: { phoneNumber: call.from, name: 'WIRELESS CALLER' },
          status: missed
            ? { code: call.status ?? 'Disconnected', reason: 'NoAnswer', rcc: false }
            : { code: 'Answered', rcc: false },
          missedCall: missed,
          standAlone: false,
          muted: false,
        },
      ],
    },
  };
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(body === undefined ? '' : JSON.stringify(body));
};
const rcError = (errorCode: string, message: string) => ({
  errorCode,
  message,
  errors: [{ errorCode, message }],
});
const token = (prefix: string) => `${prefix}${randomBytes(18).toString('base64url')}`;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFakeRingCentral(): Promise<FakeRingCentral> {
  const spec = loadSpec('ringcentral');
  const codes = new Map<string, { redirectUri: string; challenge: string | null }>();
  let seq = 0;
  let refreshes = 0;
  const fake: FakeRingCentral = {
    url: '',
    oauth: {
      clientId: 'rc-client-id',
      clientSecret: 'rc-client-secret',
      expiresIn: 3600,
      tokenRequests: [],
      accessTokens: new Map(),
      refreshTokens: new Set(),
      refreshCount: () => refreshes,
      expireAccessTokens() {
        for (const key of fake.oauth.accessTokens.keys()) fake.oauth.accessTokens.set(key, 0);
      },
      revokeRefreshTokens() {
        fake.oauth.refreshTokens.clear();
      },
      refuseClient: false,
    },
    contacts: new Map(),
    addContact(c) {
      const contact: FakeRcContact = { ...c, availability: 'Alive', seq: ++seq };
      fake.contacts.set(c.id, contact);
      return contact;
    },
    updateContact(id, patch) {
      const c = fake.contacts.get(id)!;
      fake.contacts.set(id, { ...c, ...patch, seq: ++seq });
    },
    deleteContact(id) {
      const c = fake.contacts.get(id)!;
      fake.contacts.set(id, { ...c, availability: 'Deleted', seq: ++seq });
    },
    requests: [],
    violations: new SpecViolations(),
    failNext: [],
    subscriptions: new Map(),
    maxSubscriptionSeconds: 604_800,
    dropSubscriptions() {
      fake.subscriptions.clear();
    },
    async deliver(build, headers) {
      const out: number[] = [];
      for (const sub of fake.subscriptions.values()) {
        if (sub.expiresAt <= Date.now()) continue;
        const res = await fetch(sub.address, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(sub.verificationToken === undefined ? {} : { 'verification-token': sub.verificationToken }),
            ...headers?.(sub),
          },
          body: JSON.stringify(build(sub)),
        });
        await res.arrayBuffer();
        out.push(res.status);
      }
      return out;
    },
    close: async () => {},
  };

  const subscriptionInfo = (sub: FakeRcSubscription): SubscriptionInfo => ({
    uri: `${fake.url}/restapi/v1.0/subscription/${sub.id}`,
    id: sub.id,
    eventFilters: sub.eventFilters,
    expirationTime: new Date(sub.expiresAt).toISOString(),
    expiresIn: Math.max(0, Math.floor((sub.expiresAt - Date.now()) / 1000)),
    status: 'Active',
    creationTime: new Date(sub.createdAt).toISOString(),
    deliveryMode: { transportType: 'WebHook', address: sub.address, encryption: false },
  });

  const contactResource = (c: FakeRcContact): PersonalContactResource => {
    const { seq: _seq, ...rest } = c;
    return {
      uri: `${fake.url}/restapi/v1.0/account/${RC_ACCOUNT_ID}/extension/${RC_EXTENSION_ID}/address-book/contact/${c.id}`,
      ...rest,
    };
  };

  async function tokenEndpoint(req: IncomingMessage, res: ServerResponse, form: URLSearchParams) {
    const match = spec.match('post', '/restapi/oauth/token')!;
    const problems = spec.checkForm(match, form);
    fake.oauth.tokenRequests.push(Object.fromEntries(form));
    if (problems.length > 0)
      return send(res, 400, { error: 'invalid_request', error_description: problems.join('; ') });
    const basic = `Basic ${Buffer.from(`${fake.oauth.clientId}:${fake.oauth.clientSecret}`).toString('base64')}`;
    if (req.headers.authorization !== basic || fake.oauth.refuseClient) {
      return send(res, 401, { error: 'invalid_client', error_description: 'Invalid client: rc-client-id' });
    }
    const refused = (description: string) =>
      send(res, 400, {
        error: 'invalid_grant',
        error_description: description,
        errors: [{ errorCode: 'OAU-211', message: description }],
      });
    const grant = form.get('grant_type');
    if (grant === 'authorization_code') {
      const code = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      if (!code || code.redirectUri !== form.get('redirect_uri'))
        return refused('Authorization code is invalid');
      const verifier = form.get('code_verifier');
      if (code.challenge !== null) {
        const s256 = verifier === null ? '' : createHash('sha256').update(verifier).digest('base64url');
        if (s256 !== code.challenge) return refused('Code verifier does not match the challenge');
      }
    } else if (grant === 'refresh_token') {
      const old = form.get('refresh_token') ?? '';
      if (!fake.oauth.refreshTokens.has(old)) return refused('Token is revoked');
      fake.oauth.refreshTokens.delete(old);
      refreshes += 1;
    } else {
      return send(res, 400, {
        error: 'unsupported_grant_type',
        error_description: `Unsupported grant type: ${grant}`,
      });
    }
    const answer: TokenInfo = {
      access_token: token('U1BCMDFQMDRQQVMwMXxBQUJf'),
      token_type: 'bearer',
      expires_in: fake.oauth.expiresIn,
      refresh_token: token('U1BCMDFQMDRQQVMwMXxBQUJfUkVG'),
      refresh_token_expires_in: 604_800,
      scope: 'ReadAccounts ReadContacts ReadCallLog CallControl',
      owner_id: RC_EXTENSION_ID,
      endpoint_id: 'p7GZlEVHRwKDwbx6UkH0YQ',
    };
    fake.oauth.accessTokens.set(answer.access_token!, Date.now() + fake.oauth.expiresIn * 1000);
    fake.oauth.refreshTokens.add(answer.refresh_token!);
    fake.violations.record(spec.checkResponse(match, 200, answer));
    return send(res, 200, answer);
  }

  async function validateAddress(address: string): Promise<boolean> {
    const validation = randomUUID();
    try {
      const res = await fetch(address, { method: 'POST', headers: { 'validation-token': validation } });
      await res.arrayBuffer();
      return res.status === 200 && res.headers.get('validation-token') === validation;
    } catch {
      return false;
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const method = (req.method ?? 'GET').toLowerCase();
    const text = await readBody(req);
    const isForm = String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
    let body: unknown;
    let unparsable = false;
    if (text !== '' && !isForm) {
      try {
        body = JSON.parse(text);
      } catch {
        unparsable = true;
      }
    }
    fake.requests.push({
      method: method.toUpperCase(),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      authorization: req.headers.authorization,
      form: isForm ? Object.fromEntries(new URLSearchParams(text)) : null,
      body,
    });
    if (method === 'get' && url.pathname === '/restapi/oauth/authorize') {
      // Outside the derived operations (a browser page): checked by hand.
      const q = url.searchParams;
      if (
        q.get('response_type') !== 'code' ||
        q.get('client_id') !== fake.oauth.clientId ||
        !q.get('redirect_uri')
      ) {
        return send(res, 400, { error: 'invalid_request', error_description: 'Bad authorize request' });
      }
      if (q.has('code_challenge') && q.get('code_challenge_method') !== 'S256') {
        return send(res, 400, { error: 'invalid_request', error_description: 'Only S256 is supported' });
      }
      const code = token('U1BCMDFQMDRQQVMwMXxBQUJfQ09ERQ');
      codes.set(code, { redirectUri: q.get('redirect_uri')!, challenge: q.get('code_challenge') });
      const back = new URL(q.get('redirect_uri')!);
      back.searchParams.set('code', code);
      if (q.has('state')) back.searchParams.set('state', q.get('state')!);
      res.writeHead(302, { location: back.toString() });
      return void res.end();
    }
    const match = spec.match(method, url.pathname);
    if (match === null)
      return send(
        res,
        404,
        rcError('CMN-102', `Resource for parameter [path] is not found: ${url.pathname}`),
      );
    if (match.template === '/restapi/oauth/token') return tokenEndpoint(req, res, new URLSearchParams(text));
    if (unparsable) return send(res, 400, rcError('CMN-101', 'Request body is not valid JSON'));
    const verdict = spec.checkRequest({
      method,
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body,
    });
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const expiry = bearer === undefined ? undefined : fake.oauth.accessTokens.get(bearer);
    if (expiry === undefined || expiry <= Date.now()) {
      return send(
        res,
        401,
        rcError('TokenInvalid', expiry === undefined ? 'Token not found' : 'Access token expired'),
      );
    }
    if (verdict.problems.length > 0) return send(res, 400, rcError('CMN-101', verdict.problems.join('; ')));
    const operation = spec.at(match.pointer) as Record<string, unknown>;
    const failAt = fake.failNext.findIndex((f) => f.path === undefined || f.path === url.pathname);
    if (failAt !== -1) {
      const failure = fake.failNext.splice(failAt, 1)[0]!;
      const group = String(operation['x-throttling-group'] ?? 'Medium');
      return send(
        res,
        failure.status,
        failure.status === 429
          ? rcError('CMN-301', 'Request rate exceeded')
          : rcError('CMN-211', 'Service unavailable'),
        {
          ...(failure.retryAfter === undefined ? {} : { 'retry-after': failure.retryAfter }),
          'x-rate-limit-group': group,
          'x-rate-limit-limit': '10',
          'x-rate-limit-remaining': '0',
          'x-rate-limit-window': '60',
        },
      );
    }
    const answer = (status: number, payload: unknown) => {
      fake.violations.record(spec.checkResponse(match, status, payload));
      send(res, status, payload);
    };
    const q = url.searchParams;
    switch (`${method} ${match.template}`) {
      case 'get /restapi/v1.0/account/{accountId}/extension/{extensionId}':
        return answer(200, {
          id: Number(RC_EXTENSION_ID),
          uri: `${fake.url}/restapi/v1.0/account/${RC_ACCOUNT_ID}/extension/${RC_EXTENSION_ID}`,
          extensionNumber: '101',
          name: 'Front desk',
          type: 'User',
          status: 'Enabled',
        });
      case 'get /restapi/v1.0/account/{accountId}/extension/{extensionId}/address-book-sync': {
        const perPage = q.has('perPage') ? Number(q.get('perPage')) : 250;
        if (perPage < 1 || perPage > 250)
          return send(res, 400, rcError('CMN-101', 'Parameter [perPage] value is invalid'));
        const now = new Date().toISOString();
        if ((q.get('syncType') ?? 'FSync') === 'FSync') {
          const page = q.has('pageId') ? Number(q.get('pageId')) : 1;
          const live = [...fake.contacts.values()]
            .filter((c) => c.availability === 'Alive')
            .sort((a, b) => a.id - b.id);
          const records = live.slice((page - 1) * perPage, page * perPage);
          const more = page * perPage < live.length;
          const out: AddressBookSync = {
            uri: `${fake.url}${url.pathname}${url.search}`,
            records: records.map(contactResource),
            syncInfo: { syncType: 'FSync', syncToken: `st.${seq}`, syncTime: now },
            ...(more ? { nextPageId: page + 1 } : {}),
          };
          return answer(200, out);
        }
        const from = /^st\.(\d+)$/.exec(q.get('syncToken') ?? '');
        if (!from) return send(res, 400, rcError('CMN-101', 'Parameter [syncToken] value is invalid'));
        const changed = [...fake.contacts.values()]
          .filter((c) => c.seq > Number(from[1]))
          .sort((a, b) => a.seq - b.seq);
        const records = changed.slice(0, perPage);
        const last = records.at(-1)?.seq ?? Number(from[1]);
        return answer(200, {
          uri: `${fake.url}${url.pathname}${url.search}`,
          records: records.map(contactResource),
          syncInfo: {
            syncType: 'ISync',
            syncToken: `st.${last}`,
            syncTime: now,
            olderRecordsExist: changed.length > records.length,
          },
        } satisfies AddressBookSync);
      }
      case 'post /restapi/v1.0/subscription': {
        const request = body as {
          eventFilters: string[];
          expiresIn?: number;
          deliveryMode: { transportType: string; address?: string; verificationToken?: string };
        };
        if (request.deliveryMode.transportType !== 'WebHook' || !request.deliveryMode.address) {
          return send(res, 400, rcError('SUB-521', 'Delivery mode is not supported'));
        }
        if (!(await validateAddress(request.deliveryMode.address))) {
          return send(
            res,
            400,
            rcError('SUB-523', 'WebHook responds with incorrect HTTP status or Validation-Token'),
          );
        }
        const seconds = Math.min(request.expiresIn ?? 604_800, fake.maxSubscriptionSeconds);
        const sub: FakeRcSubscription = {
          // The document's SubscriptionId parameter allows at most 20 characters.
          id: randomBytes(8).toString('hex'),
          eventFilters: request.eventFilters,
          address: request.deliveryMode.address,
          verificationToken: request.deliveryMode.verificationToken,
          createdAt: Date.now(),
          expiresAt: Date.now() + seconds * 1000,
        };
        fake.subscriptions.set(sub.id, sub);
        return answer(200, subscriptionInfo(sub));
      }
      default: {
        const sub = fake.subscriptions.get(match.params.subscriptionId ?? '');
        if (sub === undefined || sub.expiresAt <= Date.now()) {
          return send(res, 404, rcError('CMN-102', 'Resource for parameter [subscriptionId] is not found'));
        }
        if (method === 'delete') {
          fake.subscriptions.delete(sub.id);
          fake.violations.record(spec.checkResponse(match, 204, undefined));
          res.writeHead(204);
          return void res.end();
        }
        if (match.template.endsWith('/renew')) {
          sub.expiresAt = Date.now() + fake.maxSubscriptionSeconds * 1000;
        }
        return answer(200, subscriptionInfo(sub));
      }
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      fake.violations.record([`the fake failed: ${(err as Error).message}`]);
      if (!res.headersSent) send(res, 500, rcError('CMN-500', 'fake failed'));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fake.violations.assertNone();
  };
  return fake;
}
