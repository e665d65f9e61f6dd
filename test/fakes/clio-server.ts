// A small stand-in for Clio Manage API v4 on 127.0.0.1 that judges every API request our client
// sends by Clio's own v4 OpenAPI document (test/fakes/spec/clio-v4.json, derived by
// `npm run providers:derive`, checked with test/fakes/spec/openapi-spec.ts) and refuses, as Clio
// does, what the document does not allow: an operation it does not have (404), a query parameter
// it does not name or a value off its schema or enum (400), a name in `fields=` the operation's
// resource does not have, nested ones included (400, docs.developers.clio.com/api-docs/fields),
// a body off the requestBody schema or its enums (422), no bearer token (401). Every refusal is
// Clio's error body {"error": {"type", "message"}} (the document's Error schema).
//
// Its answers are built to the document's response schemas and checked against them: a record
// answers `id` and `etag` without `fields=`, and only the asked fields with it; an answer off the
// document is recorded in `violations`, and close() rejects with them, failing the test.
// `meta.paging` (not in the document's list schemas) is as Clio's Pagination doc shows it: the
// `next` link is `<base>/api/v4/contacts?…` without `.json`, which Clio serves as well.
//
// Contacts: GET with `query` (Clio's wildcard search: the text as typed, found inside a name, an
// email address or a phone number as it was stored, case-insensitively; a phone typed
// "(212) 555-0142" is not found by "+12125550142"), `type`, `updated_since`, cursor paging
// (`order=id(asc)`, `limit` ≤ 200, `page_token`); POST {"data": {...}}. Matters: POST, GET by
// `client_id`. Tasks: POST (a User or Contact assignee it knows, a matter it has), GET by
// `matter_id` and `query` (inside the name or description). Notes: POST (a "Matter" note needs
// matter.id, a "Contact" note contact.id, as the document's field descriptions say: its
// `required` list, which asks for both, is corrected in the derived subset), GET by `type`,
// `matter_id`, `contact_id`, `query` (inside the subject or detail). It records every request and can be told to fail chosen ones: a status (429 with
// Retry-After, 500, ...), before the write or after it (the write happened, the answer says
// otherwise — what a crash or a lost answer looks like to the client).
//
// OAuth as Clio Manage does it (docs.developers.clio.com, "Authorization"; Clio's server is
// Doorkeeper, whose rules and words these are where Clio's pages say nothing): GET /oauth/authorize
// (client_id, response_type=code, redirect_uri, state) sends the browser back to redirect_uri with
// ?code=&state= (the user's approval is taken as given), only to a redirect_uri registered for the
// app (`oauth.redirectUris`, as its settings in Clio's developer portal; none registered, none is
// taken): any other gets Doorkeeper's invalid_redirect_uri error page and no redirect, so no code
// ever goes to an address the app did not register. The code remembers its redirect_uri. POST
// /oauth/token, form-encoded, takes grant_type=authorization_code (client_id, client_secret,
// redirect_uri, code) or grant_type=refresh_token (client_id, client_secret, refresh_token) and
// answers {access_token, token_type: "bearer", expires_in, refresh_token}; a code exchanged with a
// redirect_uri other than its authorize request's is refused as an unknown or used code is, 400
// {"error": "invalid_grant", "error_description": ...} (RFC 6749 sections 4.1.3 and 5.2; Doorkeeper's
// AuthorizationCodeRequest), one without redirect_uri 400 invalid_request; a wrong client 401
// invalid_client. `oauth.tokenDelayMs` makes the token endpoint slow (each request waits that
// long before it is judged). Access tokens it issues expire after `oauth.expiresIn` seconds; the
// API answers 401 to an expired or unknown one. The static `token` (a pasted token) keeps working.
// POST /oauth/deauthorize (Clio's "Deauthorization"; outside the v4 document, checked here by
// hand like /oauth/token) takes the access token as bearer and as the form's `token` and ends the
// grant: that access token and its refresh token stop working (200); an unknown or expired bearer
// is 401, a form without `token` 400.
//
// Users: the person logged in at Clio who approves on the authorize page is `oauth.approver`
// (one of `users`); the code and the tokens issued for it are that user's, and
// GET /api/v4/users/who_am_i.json answers that user (User in the document; with `fields=`,
// `account{name}` is the user's Clio firm). The static `token` is `users[0]`'s.
//
// `basePath` serves everything under a path of its own (a Clio reached through a proxy path).
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { answerDelay, type Latency } from './latency.js';
import { fieldProblems, parseFields, project, type FieldNode } from './clio/fields.js';
import { loadSpec, SpecViolations, type SpecMatch } from './spec/openapi-spec.js';

export interface ClioRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  body: any;
  at: number;
}

/** A contact as Clio keeps it: emails and phones with their `primary` flag, as listed (v4 EmailAddress, PhoneNumber). */
export interface ClioContactRecord {
  id: number;
  type: 'Person' | 'Company';
  first_name: string | null;
  last_name: string | null;
  name: string;
  email_addresses: Array<{ name: string; address: string; primary: boolean }>;
  /** `name` as listed: Work, Personal or Other (PhoneNumber's enum). */
  phone_numbers: Array<{ name: 'Work' | 'Personal' | 'Other'; number: string; primary: boolean }>;
  /** ISO 8601; set on create and by updateContact. */
  updated_at?: string;
}

export interface ClioMatterRecord {
  id: number;
  client_id: number;
  description: string;
  /** As listed: Pending, Open or Closed (Matter's enum; a create sends it in lower case). */
  status: 'Pending' | 'Open' | 'Closed';
  client_reference: string | null;
}

/** A task as created (POST /tasks.json): what the request gave. */
export interface ClioTaskRecord {
  id: number;
  name: string;
  description: string;
  /** The create's date-time, as sent. */
  due_at: string | null;
  assignee: { id: number; type: 'User' | 'Contact' };
  matter_id: number | null;
}

/** A note as created (POST /notes.json). */
export interface ClioNoteRecord {
  id: number;
  type: 'Matter' | 'Contact';
  subject: string;
  detail: string;
  matter_id: number | null;
  contact_id: number | null;
}

/** A request the fake refused as Clio would (the document's judgement), with its answer. */
export interface ClioRefusal {
  method: string;
  path: string;
  status: number;
  body: { error: { type: string; message: string } };
}

export interface ClioFailure {
  status: number;
  /** Only requests with this method ... */
  method?: string;
  /** ... and this path (e.g. /api/v4/contacts.json). */
  path?: string;
  retryAfter?: string;
  /** Apply the write first, then answer with the failure. */
  afterWrite?: boolean;
}

/** A Clio user (the document's User: id, name, email and the Account it belongs to). */
export interface FakeClioUser {
  id: number;
  name: string;
  email: string;
  account: { id: number; name: string };
}

export interface FakeClioOAuth {
  clientId: string;
  clientSecret: string;
  /** Lifetime in seconds of the access tokens issued from now on. */
  expiresIn: number;
  /** A refresh answers a new refresh token and revokes the old one (Clio Platform's way). */
  rotateRefreshTokens: boolean;
  /** Every POST /oauth/token, in order, with its form fields. */
  tokenRequests: Array<Record<string, string>>;
  /** Live access tokens and when each expires (ms). */
  accessTokens: Map<string, number>;
  /** Refresh tokens that are still valid. */
  refreshTokens: Set<string>;
  /** Codes issued by /oauth/authorize and not yet exchanged, with their redirect_uri. */
  codes: Map<string, string>;
  /**
   * The redirect URIs registered for the app (its settings at Clio): /oauth/authorize refuses
   * any other. Empty at start: a test registers its stack's callback (registerClioRedirect).
   */
  redirectUris: string[];
  /** Every GET /oauth/authorize's query, in order (refused ones too). */
  authorizeRequests: Array<Record<string, string>>;
  /** How long each POST /oauth/token waits before it is judged (a slow token endpoint); 0 at start. */
  tokenDelayMs: number;
  /** The user logged in at Clio who approves the next authorize requests. */
  approver: FakeClioUser;
  /** Whose each issued code, access token and refresh token is. */
  grantUser: Map<string, FakeClioUser>;
  /** The codes, access and refresh tokens issued for a user (what "their Clio was reached" means). */
  grantsOf(userId: number): string[];
  /** How many grant_type=refresh_token requests arrived. */
  refreshCount(): number;
  /** Expires every issued access token now (the API answers 401 to them). */
  expireAccessTokens(): void;
  /** Revokes every refresh token (the user disconnected the app): a refresh gets invalid_grant. */
  revokeRefreshTokens(): void;
  /** The grant each issued access and refresh token belongs to (a refresh keeps the grant). */
  grantOf: Map<string, string>;
}

export interface FakeClio {
  url: string;
  /** The API's base URL as a firm would configure it (url + basePath). */
  baseUrl: string;
  oauth: FakeClioOAuth;
  token: string;
  /** Clio's users; the first is the static token's and the default approver. */
  users: FakeClioUser[];
  /** Adds a user (of a Clio firm of its own unless `account` is given). */
  addUser(name: string, email: string, account?: { id: number; name: string }): FakeClioUser;
  requests: ClioRequest[];
  /** Requests refused by the document's judgement (not the failures asked for), in order. */
  refusals: ClioRefusal[];
  /** What the fake answered off the document; close() rejects when there is any. */
  violations: SpecViolations;
  contacts: ClioContactRecord[];
  matters: ClioMatterRecord[];
  tasks: ClioTaskRecord[];
  notes: ClioNoteRecord[];
  /** Failures to answer with, in order, each used once by the first request it matches. */
  failNext: ClioFailure[];
  /**
   * Asked for each request no `failNext` entry took (after the token check): a failure to
   * answer it with, or undefined to answer normally (the chaos run's occasional 429s).
   */
  injectFailure: ((request: ClioRequest) => ClioFailure | undefined) | undefined;
  /**
   * API requests (not OAuth) received from now on wait, unanswered, until the returned function
   * is called: so that many clients hold a request in flight at once (a race).
   */
  hold(): () => void;
  /** API requests waiting while held. */
  held(): number;
  /** Changes a contact as a Clio user would: its updated_at becomes now. */
  updateContact(id: number, patch: Partial<ClioContactRecord>): void;
  /** POSTs that created something (contacts, matters, tasks, notes), for "the write happened once" checks. */
  writes(path: string): ClioRequest[];
  reset(): void;
  close(): Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

/** Clio's error body (the document's Error schema). */
const errorBody = (type: string, message: string) => ({ error: { type, message } });

const newToken = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;

const isLoopback = (url: URL) => /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/.test(url.hostname);

/**
 * Whether a redirect_uri asked for is the `registered` one, as Doorkeeper's URIChecker.matches?
 * judges it (at the authorize request against the app's, at the code's exchange against the
 * authorize request's): the same URI, its query aside unless the registered one has a query (then
 * the same parameters, in any order), and, both on a loopback address, any port (RFC 8252 for
 * native apps).
 */
function sameRedirect(asked: string, registered: string): boolean {
  let url: URL;
  let other: URL;
  try {
    url = new URL(asked);
    other = new URL(registered);
  } catch {
    return false;
  }
  if (url.hash !== '') return false;
  if (other.search !== '') {
    const params = (u: URL) => u.search.slice(1).split('&').sort().join('&');
    if (params(url) !== params(other)) return false;
    other.search = '';
  }
  url.search = '';
  if (isLoopback(url) && isLoopback(other)) {
    url.port = '';
    other.port = '';
  }
  return url.href === other.href;
}

const PHONE_NAMES = new Set(['Work', 'Personal', 'Other']);
const MATTER_STATUS: Record<string, ClioMatterRecord['status']> = {
  open: 'Open',
  pending: 'Pending',
  closed: 'Closed',
};

/** A stored contact as the document's Contact: primaries derived, nested items with id and etag. */
function contactResource(c: ClioContactRecord): Record<string, unknown> {
  const emails = c.email_addresses.map((e, i) => ({ id: c.id * 100 + i, etag: `"e${c.id}.${i}"`, ...e }));
  const phones = c.phone_numbers.map((p, i) => ({ id: c.id * 100 + 50 + i, etag: `"p${c.id}.${i}"`, ...p }));
  return {
    id: c.id,
    etag: `"${c.id}.${c.updated_at ?? ''}"`,
    type: c.type,
    name: c.name,
    first_name: c.first_name,
    last_name: c.last_name,
    primary_email_address:
      (c.email_addresses.find((e) => e.primary) ?? c.email_addresses[0])?.address ?? null,
    primary_phone_number: (c.phone_numbers.find((p) => p.primary) ?? c.phone_numbers[0])?.number ?? null,
    email_addresses: emails,
    phone_numbers: phones,
    updated_at: c.updated_at ?? null,
  };
}

const matterResource = (m: ClioMatterRecord): Record<string, unknown> => ({
  id: m.id,
  etag: `"m${m.id}"`,
  description: m.description,
  status: m.status,
  client_reference: m.client_reference,
  client_id: m.client_id,
  client: { id: m.client_id, etag: `"${m.client_id}"` },
});

/** Task in the document: a listed due_at is a date; the assignee a Participant. */
const taskResource = (t: ClioTaskRecord): Record<string, unknown> => ({
  id: t.id,
  etag: `"t${t.id}"`,
  name: t.name,
  description: t.description,
  status: 'pending',
  priority: 'Normal',
  ...(t.due_at === null ? {} : { due_at: t.due_at.slice(0, 10) }),
  assignee: { id: t.assignee.id, type: t.assignee.type },
  ...(t.matter_id === null ? {} : { matter: { id: t.matter_id, etag: `"m${t.matter_id}"` } }),
});

const noteResource = (n: ClioNoteRecord): Record<string, unknown> => ({
  id: n.id,
  etag: `"n${n.id}"`,
  type: n.type,
  subject: n.subject,
  detail: n.detail,
  ...(n.matter_id === null ? {} : { matter: { id: n.matter_id, etag: `"m${n.matter_id}"` } }),
  ...(n.contact_id === null ? {} : { contact: { id: n.contact_id, etag: `"${n.contact_id}"` } }),
});

/** Clio's `query` on tasks and notes: the text found inside the given fields, case-insensitively. */
const matchesQuery = (q: string | undefined, ...texts: string[]) =>
  q === undefined || texts.some((t) => t.toLowerCase().includes(q.toLowerCase()));

const userResource = (u: FakeClioUser): Record<string, unknown> => ({
  id: u.id,
  etag: `"u${u.id}"`,
  name: u.name,
  email: u.email,
  enabled: true,
  account: { id: u.account.id, etag: `"a${u.account.id}"`, name: u.account.name },
});

export async function startFakeClio(
  token = 'clio-test-token',
  options: { latency?: Latency; basePath?: string } = {},
): Promise<FakeClio> {
  const spec = loadSpec('clio-v4');
  const basePath = (options.basePath ?? '').replace(/\/+$/, '');
  let nextId = 1000;
  const users: FakeClioUser[] = [
    {
      id: 501,
      name: 'Dana Clio',
      email: 'dana@clio-firm.test',
      account: { id: 9001, name: 'Clio Test Firm' },
    },
  ];
  const grantUser = new Map<string, FakeClioUser>();
  const oauth: FakeClioOAuth = {
    clientId: 'clio-client-id',
    clientSecret: 'clio-client-secret',
    expiresIn: 2_592_000,
    rotateRefreshTokens: true,
    tokenRequests: [],
    accessTokens: new Map(),
    refreshTokens: new Set(),
    codes: new Map(),
    redirectUris: [],
    authorizeRequests: [],
    tokenDelayMs: 0,
    approver: users[0]!,
    grantUser,
    grantsOf(userId) {
      return [...grantUser].filter(([, user]) => user.id === userId).map(([grant]) => grant);
    },
    grantOf: new Map(),
    refreshCount() {
      return this.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length;
    },
    expireAccessTokens() {
      for (const key of this.accessTokens.keys()) this.accessTokens.set(key, 0);
    },
    revokeRefreshTokens() {
      this.refreshTokens.clear();
    },
  };
  let gate: Promise<void> | null = null;
  let waiting = 0;
  const fake: Omit<FakeClio, 'url' | 'baseUrl' | 'close'> = {
    hold() {
      let open!: () => void;
      gate = new Promise<void>((resolve) => (open = resolve));
      return () => {
        gate = null;
        open();
      };
    },
    held: () => waiting,
    oauth,
    token,
    users,
    addUser(name, email, account) {
      const id = nextId++;
      const user = { id, name, email, account: account ?? { id: id + 50_000, name: `${name} Law` } };
      users.push(user);
      return user;
    },
    requests: [],
    refusals: [],
    violations: new SpecViolations(),
    contacts: [],
    matters: [],
    tasks: [],
    notes: [],
    failNext: [],
    injectFailure: undefined,
    updateContact(id, patch) {
      const contact = this.contacts.find((c) => c.id === id);
      if (contact === undefined) throw new Error(`no contact ${id}`);
      Object.assign(contact, patch, { updated_at: new Date().toISOString() });
    },
    writes(path) {
      return this.requests.filter((r) => r.method === 'POST' && r.path === path);
    },
    reset() {
      this.requests.length = 0;
      this.refusals.length = 0;
      this.contacts.length = 0;
      this.matters.length = 0;
      this.tasks.length = 0;
      this.notes.length = 0;
      this.failNext.length = 0;
      oauth.tokenRequests.length = 0;
    },
  };

  const issue = (
    res: ServerResponse,
    refreshToken: string | null,
    user: FakeClioUser,
    grant = newToken('grant'),
  ) => {
    const access = newToken('access');
    oauth.accessTokens.set(access, Date.now() + oauth.expiresIn * 1000);
    const refresh = refreshToken ?? newToken('refresh');
    oauth.refreshTokens.add(refresh);
    grantUser.set(access, user);
    grantUser.set(refresh, user);
    oauth.grantOf.set(access, grant);
    oauth.grantOf.set(refresh, grant);
    sendJson(
      res,
      200,
      {
        access_token: access,
        token_type: 'bearer',
        expires_in: oauth.expiresIn,
        ...(refreshToken === null ? { refresh_token: refresh } : {}),
      },
      { 'cache-control': 'no-store' },
    );
  };
  const oauthError = (res: ServerResponse, status: number, error: string, description: string) =>
    sendJson(res, status, { error, error_description: description });

  const authorize = (res: ServerResponse, query: Record<string, string>) => {
    oauth.authorizeRequests.push(query);
    if (query.client_id !== oauth.clientId || query.response_type !== 'code') {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      return res.end('The client_id or response_type=code is wrong.');
    }
    if (
      query.redirect_uri === undefined ||
      !oauth.redirectUris.some((registered) => sameRedirect(query.redirect_uri!, registered))
    ) {
      // Never redirected (the address is what is in doubt): the error page, in Doorkeeper's words.
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      return res.end(`invalid_redirect_uri: ${INVALID_REDIRECT_URI}`);
    }
    const code = newToken('code');
    oauth.codes.set(code, query.redirect_uri);
    grantUser.set(code, oauth.approver);
    const back = new URL(query.redirect_uri);
    back.searchParams.set('code', code);
    if (query.state !== undefined) back.searchParams.set('state', query.state);
    res.writeHead(302, { location: back.toString() });
    res.end();
  };

  const INVALID_GRANT =
    'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.';
  const INVALID_REDIRECT_URI =
    "The requested redirect uri is malformed or doesn't match client redirect URI.";
  const tokenGrant = async (req: IncomingMessage, res: ServerResponse, text: string) => {
    const form = (req.headers['content-type'] ?? '').includes('application/json')
      ? (JSON.parse(text) as Record<string, string>)
      : Object.fromEntries(new URLSearchParams(text));
    oauth.tokenRequests.push(form);
    if (oauth.tokenDelayMs > 0) await sleep(oauth.tokenDelayMs);
    if (form.client_id !== oauth.clientId || form.client_secret !== oauth.clientSecret) {
      return oauthError(res, 401, 'invalid_client', 'Client authentication failed.');
    }
    if (form.grant_type === 'authorization_code') {
      if (!form.redirect_uri) {
        return oauthError(res, 400, 'invalid_request', 'Missing required parameter: redirect_uri.');
      }
      const redirect = form.code === undefined ? undefined : oauth.codes.get(form.code);
      if (redirect === undefined || !sameRedirect(form.redirect_uri, redirect)) {
        return oauthError(res, 400, 'invalid_grant', INVALID_GRANT);
      }
      oauth.codes.delete(form.code!);
      return issue(res, null, grantUser.get(form.code!) ?? users[0]!);
    }
    if (form.grant_type === 'refresh_token') {
      const old = form.refresh_token;
      if (old === undefined || !oauth.refreshTokens.has(old)) {
        return oauthError(res, 400, 'invalid_grant', INVALID_GRANT);
      }
      const user = grantUser.get(old) ?? users[0]!;
      if (!oauth.rotateRefreshTokens) return issue(res, old, user, oauth.grantOf.get(old));
      oauth.refreshTokens.delete(old);
      return issue(res, null, user, oauth.grantOf.get(old));
    }
    return oauthError(
      res,
      400,
      'unsupported_grant_type',
      'The authorization grant type is not supported by the authorization server.',
    );
  };

  const deauthorize = (req: IncomingMessage, res: ServerResponse, text: string) => {
    const form = Object.fromEntries(new URLSearchParams(text));
    const request: ClioRequest = {
      method: 'POST',
      path: '/oauth/deauthorize',
      query: {},
      authorization: req.headers.authorization,
      body: form,
      at: Date.now(),
    };
    fake.requests.push(request);
    const failure = fake.failNext.findIndex(
      (f) => (f.method ?? 'POST') === 'POST' && f.path === '/oauth/deauthorize',
    );
    if (failure >= 0) {
      const [f] = fake.failNext.splice(failure, 1);
      return oauthError(res, f!.status, 'server_error', 'The request could not be completed.');
    }
    const bearer = req.headers.authorization?.startsWith('Bearer ') ? req.headers.authorization.slice(7) : '';
    const expires = oauth.accessTokens.get(bearer);
    if (expires === undefined || expires <= Date.now()) {
      return oauthError(res, 401, 'invalid_token', 'The access token is invalid or has expired.');
    }
    if (form.token === undefined || form.token === '') {
      return oauthError(res, 400, 'invalid_request', 'The token parameter is missing.');
    }
    // The whole grant ends: every access and refresh token issued under it.
    const grant = oauth.grantOf.get(bearer);
    for (const [token, of] of oauth.grantOf) {
      if (of !== grant) continue;
      oauth.accessTokens.delete(token);
      oauth.refreshTokens.delete(token);
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end('{}');
  };

  const authorized = (header: string | undefined): boolean => {
    if (header === `Bearer ${fake.token}`) return true;
    const bearer = header?.startsWith('Bearer ') ? header.slice(7) : undefined;
    const expires = bearer === undefined ? undefined : oauth.accessTokens.get(bearer);
    return expires !== undefined && expires > Date.now();
  };

  /** The record schema of an operation's success answer (its `data`, or `data`'s items). */
  const recordSchema = (match: SpecMatch) => {
    const responses = spec.at(`${match.pointer}/responses`) as Record<string, unknown>;
    const ok = (responses['200'] ?? responses['201']) as { content: Record<string, { schema: unknown }> };
    const body = spec.deref(Object.values(ok.content)[0]!.schema as never) as {
      properties: { data: unknown };
    };
    const data = spec.deref(body.properties.data as never) as { type?: string; items?: unknown };
    return (data.type === 'array' ? data.items : data) as never;
  };

  const handle = (req: IncomingMessage, res: ServerResponse, text: string) => {
    const url = new URL(req.url ?? '/', 'http://clio.test');
    if (basePath !== '' && !url.pathname.startsWith(`${basePath}/`)) {
      return sendJson(res, 404, errorBody('NotFound', `No route ${url.pathname}.`));
    }
    const path = url.pathname.slice(basePath.length);
    const query = Object.fromEntries(url.searchParams);
    if (path === '/oauth/authorize' && req.method === 'GET') return authorize(res, query);
    if (path === '/oauth/token' && req.method === 'POST') {
      return void tokenGrant(req, res, text).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, errorBody('InternalServerError', (err as Error).message));
      });
    }
    if (path === '/oauth/deauthorize' && req.method === 'POST') return deauthorize(req, res, text);
    const method = req.method ?? 'GET';
    let body: any;
    let unparsable = false;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      unparsable = true;
    }
    fake.requests.push({
      method,
      path,
      query,
      authorization: req.headers.authorization,
      body,
      at: Date.now(),
    });

    // Clio serves each listing with and without `.json` (its paging links have none).
    const route = /^\/api\/v4\/[a-z_]+$/.test(path) ? `${path}.json` : path;
    const match = spec.match(method, route);
    /** Answers, checking the body against the document's response for this status. */
    const answer = (
      status: number,
      payload: Record<string, unknown>,
      headers: Record<string, string> = {},
    ) => {
      if (match !== null) {
        // meta.paging is Clio's Pagination doc, not the list schemas: checked on its own.
        const { meta, ...documented } = payload;
        fake.violations.record(spec.checkResponse(match, status, documented));
        if (meta !== undefined) {
          const paging = (meta as { paging?: Record<string, unknown> }).paging ?? {};
          const extra = Object.keys(meta as object).filter((k) => k !== 'paging');
          const bad = Object.entries(paging).filter(
            ([k, v]) => !['next', 'previous'].includes(k) || typeof v !== 'string',
          );
          if (extra.length > 0 || bad.length > 0)
            fake.violations.record([`meta off Clio's paging doc: ${JSON.stringify(meta)}`]);
        }
      }
      sendJson(res, status, payload, headers);
    };
    const refuse = (status: number, type: string, message: string) => {
      const refusal = errorBody(type, message);
      fake.refusals.push({ method, path, status, body: refusal });
      answer(status, refusal);
    };

    if (!authorized(req.headers.authorization)) {
      return answer(401, errorBody('AuthenticationError', 'The access token is invalid or has expired.'));
    }
    if (match === null) return refuse(404, 'RecordNotFound', `No route ${method} ${path}.`);
    if (unparsable) return refuse(400, 'ArgumentError', 'The request body is not valid JSON.');
    const verdict = spec.checkRequest({
      method,
      path: route,
      query: url.searchParams,
      headers: req.headers,
      body,
    });
    const bodyProblems = verdict.problems.filter((p) =>
      /^(body|the request body|content-type|this operation takes)/.test(p),
    );
    const queryProblems = verdict.problems.filter((p) => !bodyProblems.includes(p));
    if (queryProblems.length > 0) return refuse(400, 'ArgumentError', queryProblems.join('; '));
    let fields: FieldNode[] | null = null;
    if (url.searchParams.has('fields')) {
      try {
        fields = parseFields(url.searchParams.get('fields')!);
      } catch (err) {
        return refuse(400, 'InvalidFields', `Invalid fields: ${(err as Error).message}`);
      }
      const problems = fieldProblems(spec, recordSchema(match), fields);
      if (problems.length > 0) return refuse(400, 'InvalidFields', `Invalid fields: ${problems.join('; ')}`);
    }
    if (bodyProblems.length > 0) return refuse(422, 'ArgumentError', bodyProblems.join('; '));

    const index = fake.failNext.findIndex(
      (f) => (f.method === undefined || f.method === method) && (f.path === undefined || f.path === path),
    );
    const failure =
      index === -1 ? fake.injectFailure?.(fake.requests.at(-1)!) : fake.failNext.splice(index, 1)[0];
    // A 5xx the test asked for is a server fault, which the document does not describe: sent
    // as it is. A 429 is the document's own answer, checked like any other.
    const fail = () => {
      const status = failure!.status;
      const payload = errorBody(
        status === 429 ? 'RateLimited' : 'InternalServerError',
        status === 429 ? 'Rate limit exceeded.' : 'Internal server error.',
      );
      const headers: Record<string, string> =
        failure!.retryAfter === undefined ? {} : { 'retry-after': failure!.retryAfter };
      return status >= 500 ? sendJson(res, status, payload, headers) : answer(status, payload, headers);
    };
    if (failure !== undefined && !failure.afterWrite) return fail();
    const done = (status: number, payload: Record<string, unknown>) =>
      failure !== undefined ? fail() : answer(status, payload);

    if (match.template === '/contacts.json' && method === 'GET') {
      const q = (query.query ?? '').toLowerCase();
      const since = query.updated_since === undefined ? null : Date.parse(query.updated_since);
      let rows = fake.contacts.filter(
        (c) =>
          (query.type === undefined || c.type === query.type) &&
          (since === null || Date.parse(c.updated_at ?? '1970-01-01T00:00:00Z') >= since) &&
          (q === '' ||
            c.name.toLowerCase().includes(q) ||
            c.email_addresses.some((e) => e.address.toLowerCase().includes(q)) ||
            c.phone_numbers.some((p) => p.number.toLowerCase().includes(q))),
      );
      const limit = query.limit === undefined ? 200 : Number(query.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 200)
        return refuse(400, 'ArgumentError', 'limit must be an integer from 1 to 200.');
      if (query.page_token !== undefined && (query.order ?? 'id(asc)') !== 'id(asc)')
        return refuse(400, 'ArgumentError', 'Cursor paging is ordered by id(asc) only.');
      const after =
        query.page_token === undefined ? 0 : Number(Buffer.from(query.page_token, 'base64url').toString());
      rows = [...rows].sort((a, b) => a.id - b.id).filter((c) => c.id > after);
      let next: string | undefined;
      if (rows.length > limit) {
        // As Clio's Pagination doc shows it: the listing's URL without `.json`.
        const link = new URL(`http://${req.headers.host}${basePath}/api/v4/contacts`);
        for (const [k, v] of Object.entries(query)) if (k !== 'page_token') link.searchParams.set(k, v);
        link.searchParams.set('page_token', Buffer.from(String(rows[limit - 1]!.id)).toString('base64url'));
        next = link.toString();
      }
      rows = rows.slice(0, limit);
      return done(200, {
        data: rows.map((c) => project(contactResource(c), fields)),
        meta: { paging: next === undefined ? {} : { next } },
      });
    }
    if (match.template === '/contacts.json' && method === 'POST') {
      const data = body.data;
      if (data.type === 'Person' && !data.first_name && !data.last_name && !data.name) {
        return refuse(422, 'ArgumentError', 'A Person needs a name.');
      }
      const contact: ClioContactRecord = {
        id: nextId++,
        type: data.type,
        first_name: data.first_name ?? null,
        last_name: data.last_name ?? null,
        name: [data.first_name, data.last_name].filter(Boolean).join(' ') || data.name,
        email_addresses: (data.email_addresses ?? []).map((e: any, i: number, all: any[]) => ({
          name: e.name ?? 'Other',
          address: e.address,
          primary: e.default_email === true || (all.length === 1 && i === 0),
        })),
        phone_numbers: (data.phone_numbers ?? []).map((p: any, i: number, all: any[]) => ({
          // The listed enum (Work, Personal, Other) is narrower than the create one.
          name: PHONE_NAMES.has(p.name) ? p.name : 'Other',
          number: p.number,
          primary: p.default_number === true || (all.length === 1 && i === 0),
        })),
        updated_at: new Date().toISOString(),
      };
      fake.contacts.push(contact);
      return done(201, { data: project(contactResource(contact), fields) });
    }
    if (match.template === '/matters.json' && method === 'POST') {
      const data = body.data;
      const clientId = data.client.id;
      if (!fake.contacts.some((c) => c.id === clientId))
        return refuse(422, 'ArgumentError', 'client.id is not a contact.');
      const matter: ClioMatterRecord = {
        id: nextId++,
        client_id: clientId,
        description: data.description,
        status: MATTER_STATUS[data.status ?? 'open']!,
        client_reference: data.client_reference ?? null,
      };
      fake.matters.push(matter);
      return done(201, { data: project(matterResource(matter), fields) });
    }
    if (match.template === '/matters.json' && method === 'GET') {
      // As Clio pages: ordered by `order` (default id(asc)), at most `limit` (1-200) a page.
      const rows = fake.matters
        .filter((m) => query.client_id === undefined || String(m.client_id) === query.client_id)
        .sort((a, b) => (query.order === 'id(desc)' ? b.id - a.id : a.id - b.id));
      const limit = query.limit === undefined ? 200 : Number(query.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 200)
        return refuse(400, 'ArgumentError', 'limit must be an integer from 1 to 200.');
      const page = rows.slice(0, limit);
      // A next link only to say more follow (our client reads the first page of its own order).
      const next = new URL(`http://${req.headers.host}${basePath}/api/v4/matters`);
      for (const [k, v] of Object.entries(query)) next.searchParams.set(k, v);
      next.searchParams.set(
        'page_token',
        Buffer.from(String(page[page.length - 1]?.id ?? 0)).toString('base64url'),
      );
      return done(200, {
        data: page.map((m) => project(matterResource(m), fields)),
        meta: { paging: rows.length > limit ? { next: next.toString() } : {} },
      });
    }
    if (match.template === '/tasks.json' && method === 'POST') {
      const data = body.data;
      const matterId = data.matter?.id ?? null;
      if (matterId !== null && !fake.matters.some((m) => m.id === matterId))
        return refuse(422, 'ArgumentError', 'matter.id is not a matter.');
      const assignee = data.assignee as ClioTaskRecord['assignee'];
      const known =
        assignee.type === 'User'
          ? users.some((u) => u.id === assignee.id)
          : fake.contacts.some((c) => c.id === assignee.id);
      if (!known) return refuse(422, 'ArgumentError', `assignee is not a ${assignee.type}.`);
      if (data.name === '') return refuse(422, 'ArgumentError', 'name cannot be blank.');
      const task: ClioTaskRecord = {
        id: nextId++,
        name: data.name,
        description: data.description,
        due_at: data.due_at ?? null,
        assignee: { id: assignee.id, type: assignee.type },
        matter_id: matterId,
      };
      fake.tasks.push(task);
      return done(201, { data: project(taskResource(task), fields) });
    }
    if (match.template === '/tasks.json' && method === 'GET') {
      const rows = fake.tasks.filter(
        (t) =>
          (query.matter_id === undefined || String(t.matter_id) === query.matter_id) &&
          matchesQuery(query.query, t.name, t.description),
      );
      return done(200, { data: rows.map((t) => project(taskResource(t), fields)), meta: { paging: {} } });
    }
    if (match.template === '/notes.json' && method === 'POST') {
      const data = body.data;
      // The rule the document's field descriptions give (its `required` list is corrected).
      const regarding = data.type === 'Matter' ? data.matter : data.contact;
      if (regarding?.id === undefined)
        return refuse(422, 'ArgumentError', `A ${data.type} note needs ${data.type.toLowerCase()}.id.`);
      if (data.matter !== undefined && !fake.matters.some((m) => m.id === data.matter.id))
        return refuse(422, 'ArgumentError', 'matter.id is not a matter.');
      if (data.contact !== undefined && !fake.contacts.some((c) => c.id === data.contact.id))
        return refuse(422, 'ArgumentError', 'contact.id is not a contact.');
      const note: ClioNoteRecord = {
        id: nextId++,
        type: data.type,
        subject: data.subject ?? '',
        detail: data.detail ?? '',
        matter_id: data.matter?.id ?? null,
        contact_id: data.contact?.id ?? null,
      };
      fake.notes.push(note);
      return done(201, { data: project(noteResource(note), fields) });
    }
    if (match.template === '/notes.json' && method === 'GET') {
      const rows = fake.notes.filter(
        (n) =>
          n.type === query.type &&
          (query.matter_id === undefined || String(n.matter_id) === query.matter_id) &&
          (query.contact_id === undefined || String(n.contact_id) === query.contact_id) &&
          matchesQuery(query.query, n.subject, n.detail),
      );
      return done(200, { data: rows.map((n) => project(noteResource(n), fields)), meta: { paging: {} } });
    }
    if (match.template === '/users/who_am_i.json' && method === 'GET') {
      const bearer = req.headers.authorization?.slice(7) ?? '';
      const user = bearer === fake.token ? users[0]! : (grantUser.get(bearer) ?? users[0]!);
      return done(200, { data: project(userResource(user), fields) });
    }
    if (match.template === '/contacts/{id}.json' && method === 'GET') {
      const contact = fake.contacts.find((c) => String(c.id) === match.params.id);
      if (contact === undefined) return refuse(404, 'RecordNotFound', `No Contact ${match.params.id}.`);
      return done(200, { data: project(contactResource(contact), fields) });
    }
    return refuse(404, 'RecordNotFound', `The fake has no ${method} ${path}.`);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const held = gate;
      if (held !== null && !(req.url ?? '').includes('/oauth/')) {
        waiting++;
        await held;
        waiting--;
      }
      await answerDelay(options.latency);
      try {
        handle(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        if (!res.headersSent) sendJson(res, 500, errorBody('InternalServerError', (err as Error).message));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return Object.assign(fake, {
    url,
    baseUrl: `${url}${basePath}`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      fake.violations.assertNone();
    },
  });
}
