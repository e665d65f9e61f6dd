// A small stand-in for Clio Manage API v4 on 127.0.0.1, speaking its JSON shapes: contacts
// (GET with ?query= wildcard search and ?fields=, POST {"data": {"type": "Person", ...}}) and
// matters (POST {"data": {"client": {"id"}, ...}}, GET ?client_id=). It checks the bearer token,
// records every request, and can be told to fail chosen requests: a status (429 with
// Retry-After, 500, ...), before the write or after it (the write happened, the answer says
// otherwise — what a crash or a lost answer looks like to the client).
//
// OAuth as Clio Manage does it (docs.developers.clio.com, "Authorization"): GET /oauth/authorize
// (client_id, response_type=code, redirect_uri, state) sends the browser back to redirect_uri with
// ?code=&state= (the user's approval is taken as given); POST /oauth/token, form-encoded, takes
// grant_type=authorization_code (client_id, client_secret, redirect_uri, code) or
// grant_type=refresh_token (client_id, client_secret, refresh_token) and answers
// {access_token, token_type: "bearer", expires_in, refresh_token}; a refused grant is
// 400 {"error": "invalid_grant", "error_description": ...}, a wrong client 401 invalid_client.
// Access tokens it issues expire after `oauth.expiresIn` seconds; the API answers 401 to an
// expired or unknown one. The static `token` (a pasted token) keeps working.
//
// Listing contacts with cursor paging as Clio does it (docs.developers.clio.com, "Pagination"):
// with `limit` (at most 200) the records come in id order, `updated_since` (ISO 8601) keeps
// those updated at or after it, and meta.paging.next is the absolute URL of the next page (the
// same query with a page_token), absent on the last page.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerDelay, type Latency } from './latency.js';

export interface ClioRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  body: any;
  at: number;
}

export interface ClioContactRecord {
  id: number;
  type: 'Person' | 'Company';
  first_name: string | null;
  last_name: string | null;
  name: string;
  email_addresses: Array<{ name: string; address: string; default_email: boolean }>;
  phone_numbers: Array<{ name: string; number: string; default_number: boolean }>;
  /** ISO 8601; set on create and by updateContact. */
  updated_at?: string;
  primary_email_address?: string | null;
  primary_phone_number?: string | null;
}

export interface ClioMatterRecord {
  id: number;
  client_id: number;
  description: string;
  status: string;
  client_reference: string | null;
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
  /** How many grant_type=refresh_token requests arrived. */
  refreshCount(): number;
  /** Expires every issued access token now (the API answers 401 to them). */
  expireAccessTokens(): void;
  /** Revokes every refresh token (the user disconnected the app): a refresh gets invalid_grant. */
  revokeRefreshTokens(): void;
}

export interface FakeClio {
  url: string;
  oauth: FakeClioOAuth;
  token: string;
  requests: ClioRequest[];
  contacts: ClioContactRecord[];
  matters: ClioMatterRecord[];
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
  /** POSTs that created something (contacts or matters), for "the write happened once" checks. */
  writes(path: string): ClioRequest[];
  reset(): void;
  close(): Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

const clioError = (
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
) =>
  sendJson(
    res,
    status,
    { error: { type: status === 401 ? 'AuthenticationError' : 'Error', message } },
    headers,
  );

/** Clio's ?fields=: a comma list, nested fields in braces (email_addresses{address}). */
function project(record: Record<string, unknown>, fields: string | undefined): Record<string, unknown> {
  if (fields === undefined) return { id: record.id, etag: `"${record.id}"` };
  const out: Record<string, unknown> = {};
  for (const match of fields.matchAll(/([a-z_]+)(\{([^}]*)\})?/g)) {
    const [, name, , inner] = match;
    const value = record[name!];
    if (inner !== undefined && Array.isArray(value)) {
      const keys = inner.split(',');
      out[name!] = value.map((v: Record<string, unknown>) => Object.fromEntries(keys.map((k) => [k, v[k]])));
    } else {
      out[name!] = value ?? null;
    }
  }
  return out;
}

const newToken = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;

export async function startFakeClio(
  token = 'clio-test-token',
  options: { latency?: Latency } = {},
): Promise<FakeClio> {
  let nextId = 1000;
  const oauth: FakeClioOAuth = {
    clientId: 'clio-client-id',
    clientSecret: 'clio-client-secret',
    expiresIn: 2_592_000,
    rotateRefreshTokens: true,
    tokenRequests: [],
    accessTokens: new Map(),
    refreshTokens: new Set(),
    codes: new Map(),
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
  const fake: Omit<FakeClio, 'url' | 'close'> = {
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
    requests: [],
    contacts: [],
    matters: [],
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
      this.contacts.length = 0;
      this.matters.length = 0;
      this.failNext.length = 0;
      oauth.tokenRequests.length = 0;
    },
  };

  const issue = (res: ServerResponse, refreshToken: string | null) => {
    const access = newToken('access');
    oauth.accessTokens.set(access, Date.now() + oauth.expiresIn * 1000);
    const refresh = refreshToken ?? newToken('refresh');
    oauth.refreshTokens.add(refresh);
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
    if (query.client_id !== oauth.clientId || query.response_type !== 'code' || !query.redirect_uri) {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      return res.end('The client_id, response_type=code or redirect_uri is wrong.');
    }
    const code = newToken('code');
    oauth.codes.set(code, query.redirect_uri);
    const back = new URL(query.redirect_uri);
    back.searchParams.set('code', code);
    if (query.state !== undefined) back.searchParams.set('state', query.state);
    res.writeHead(302, { location: back.toString() });
    res.end();
  };

  const tokenGrant = (req: IncomingMessage, res: ServerResponse, text: string) => {
    const form = (req.headers['content-type'] ?? '').includes('application/json')
      ? (JSON.parse(text) as Record<string, string>)
      : Object.fromEntries(new URLSearchParams(text));
    oauth.tokenRequests.push(form);
    if (form.client_id !== oauth.clientId || form.client_secret !== oauth.clientSecret) {
      return oauthError(res, 401, 'invalid_client', 'Client authentication failed.');
    }
    if (form.grant_type === 'authorization_code') {
      const redirect = form.code === undefined ? undefined : oauth.codes.get(form.code);
      if (redirect === undefined || redirect !== form.redirect_uri) {
        return oauthError(
          res,
          400,
          'invalid_grant',
          'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
        );
      }
      oauth.codes.delete(form.code!);
      return issue(res, null);
    }
    if (form.grant_type === 'refresh_token') {
      const old = form.refresh_token;
      if (old === undefined || !oauth.refreshTokens.has(old)) {
        return oauthError(
          res,
          400,
          'invalid_grant',
          'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
        );
      }
      if (!oauth.rotateRefreshTokens) return issue(res, old);
      oauth.refreshTokens.delete(old);
      return issue(res, null);
    }
    return oauthError(
      res,
      400,
      'unsupported_grant_type',
      'The authorization grant type is not supported by the authorization server.',
    );
  };

  const authorized = (header: string | undefined): boolean => {
    if (header === `Bearer ${fake.token}`) return true;
    const bearer = header?.startsWith('Bearer ') ? header.slice(7) : undefined;
    const expires = bearer === undefined ? undefined : oauth.accessTokens.get(bearer);
    return expires !== undefined && expires > Date.now();
  };

  const handle = (req: IncomingMessage, res: ServerResponse, text: string) => {
    const url = new URL(req.url ?? '/', 'http://clio.test');
    const path = url.pathname;
    const query = Object.fromEntries(url.searchParams);
    if (path === '/oauth/authorize' && req.method === 'GET') return authorize(res, query);
    if (path === '/oauth/token' && req.method === 'POST') return tokenGrant(req, res, text);
    let body: any;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      return clioError(res, 400, 'The request body is not valid JSON.');
    }
    const method = req.method ?? 'GET';
    fake.requests.push({
      method,
      path,
      query,
      authorization: req.headers.authorization,
      body,
      at: Date.now(),
    });
    if (!authorized(req.headers.authorization)) {
      return clioError(res, 401, 'The access token is invalid or has expired.');
    }
    const index = fake.failNext.findIndex(
      (f) => (f.method === undefined || f.method === method) && (f.path === undefined || f.path === path),
    );
    const failure =
      index === -1 ? fake.injectFailure?.(fake.requests.at(-1)!) : fake.failNext.splice(index, 1)[0];
    const fail = () =>
      clioError(
        res,
        failure!.status,
        failure!.status === 429 ? 'Rate limit exceeded.' : 'Internal server error.',
        failure!.retryAfter === undefined ? {} : { 'retry-after': failure!.retryAfter },
      );
    if (failure !== undefined && !failure.afterWrite) return fail();
    const answer = (status: number, payload: unknown) =>
      failure !== undefined ? fail() : sendJson(res, status, payload);

    if (path === '/api/v4/contacts.json' && method === 'GET') {
      const q = (query.query ?? '').toLowerCase();
      const since = query.updated_since === undefined ? null : Date.parse(query.updated_since);
      if (since !== null && Number.isNaN(since)) return clioError(res, 400, 'updated_since is not a date.');
      let rows = fake.contacts.filter(
        (c) =>
          (query.type === undefined || c.type === query.type) &&
          (since === null || Date.parse(c.updated_at ?? '1970-01-01T00:00:00Z') >= since) &&
          (q === '' ||
            c.name.toLowerCase().includes(q) ||
            c.email_addresses.some((e) => e.address.toLowerCase().includes(q)) ||
            c.phone_numbers.some((p) => p.number.includes(q))),
      );
      const records = rows.length;
      let next: string | undefined;
      if (query.limit !== undefined) {
        const limit = Number(query.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 200)
          return clioError(res, 400, 'limit must be an integer from 1 to 200.');
        if (query.order !== undefined && query.order !== 'id(asc)' && query.page_token !== undefined)
          return clioError(res, 400, 'Cursor paging is ordered by id(asc) only.');
        const after =
          query.page_token === undefined ? 0 : Number(Buffer.from(query.page_token, 'base64url').toString());
        rows = [...rows].sort((a, b) => a.id - b.id).filter((c) => c.id > after);
        if (rows.length > limit) {
          const link = new URL(`http://${req.headers.host}${path}`);
          for (const [k, v] of Object.entries(query)) if (k !== 'page_token') link.searchParams.set(k, v);
          link.searchParams.set('page_token', Buffer.from(String(rows[limit - 1]!.id)).toString('base64url'));
          next = link.toString();
        }
        rows = rows.slice(0, limit);
      }
      return answer(200, {
        data: rows.map((c) => project(c as unknown as Record<string, unknown>, query.fields)),
        meta: { records, paging: next === undefined ? {} : { next } },
      });
    }
    if (path === '/api/v4/contacts.json' && method === 'POST') {
      const data = body?.data;
      if (data?.type !== 'Person' && data?.type !== 'Company')
        return clioError(res, 422, 'type must be Person or Company.');
      if (data.type === 'Person' && !data.first_name && !data.last_name) {
        return clioError(res, 422, 'A Person needs a first_name or a last_name.');
      }
      const contact: ClioContactRecord = {
        id: nextId++,
        type: data.type,
        first_name: data.first_name ?? null,
        last_name: data.last_name ?? null,
        name: data.name ?? [data.first_name, data.last_name].filter(Boolean).join(' '),
        email_addresses: data.email_addresses ?? [],
        phone_numbers: data.phone_numbers ?? [],
        updated_at: new Date().toISOString(),
      };
      fake.contacts.push(contact);
      return answer(201, { data: project(contact as unknown as Record<string, unknown>, query.fields) });
    }
    if (path === '/api/v4/matters.json' && method === 'POST') {
      const data = body?.data;
      const clientId = data?.client?.id;
      if (!fake.contacts.some((c) => c.id === clientId))
        return clioError(res, 422, 'client.id is not a contact.');
      if (typeof data.description !== 'string' || data.description === '') {
        return clioError(res, 422, 'description is required.');
      }
      const matter: ClioMatterRecord = {
        id: nextId++,
        client_id: clientId,
        description: data.description,
        status: data.status ?? 'Open',
        client_reference: data.client_reference ?? null,
      };
      fake.matters.push(matter);
      return answer(201, { data: project(matter as unknown as Record<string, unknown>, query.fields) });
    }
    if (path === '/api/v4/matters.json' && method === 'GET') {
      const rows = fake.matters.filter(
        (m) => query.client_id === undefined || String(m.client_id) === query.client_id,
      );
      return answer(200, {
        data: rows.map((m) => project(m as unknown as Record<string, unknown>, query.fields)),
        meta: { records: rows.length, paging: {} },
      });
    }
    return clioError(res, 404, `No route ${method} ${path}.`);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const held = gate;
      if (held !== null && !(req.url ?? '').startsWith('/oauth/')) {
        waiting++;
        await held;
        waiting--;
      }
      await answerDelay(options.latency);
      try {
        handle(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        if (!res.headersSent) clioError(res, 500, (err as Error).message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
