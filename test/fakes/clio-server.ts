// A small stand-in for Clio Manage API v4 on 127.0.0.1, speaking its JSON shapes: contacts
// (GET with ?query= wildcard search and ?fields=, POST {"data": {"type": "Person", ...}}) and
// matters (POST {"data": {"client": {"id"}, ...}}, GET ?client_id=). It checks the bearer token,
// records every request, and can be told to fail chosen requests: a status (429 with
// Retry-After, 500, ...), before the write or after it (the write happened, the answer says
// otherwise — what a crash or a lost answer looks like to the client).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

export interface FakeClio {
  url: string;
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

export async function startFakeClio(token = 'clio-test-token'): Promise<FakeClio> {
  let nextId = 1000;
  const fake: Omit<FakeClio, 'url' | 'close'> = {
    token,
    requests: [],
    contacts: [],
    matters: [],
    failNext: [],
    injectFailure: undefined,
    writes(path) {
      return this.requests.filter((r) => r.method === 'POST' && r.path === path);
    },
    reset() {
      this.requests.length = 0;
      this.contacts.length = 0;
      this.matters.length = 0;
      this.failNext.length = 0;
    },
  };

  const handle = (req: IncomingMessage, res: ServerResponse, text: string) => {
    const url = new URL(req.url ?? '/', 'http://clio.test');
    const path = url.pathname;
    const query = Object.fromEntries(url.searchParams);
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
    if (req.headers.authorization !== `Bearer ${fake.token}`) {
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
      const rows = fake.contacts.filter(
        (c) =>
          (query.type === undefined || c.type === query.type) &&
          (q === '' ||
            c.name.toLowerCase().includes(q) ||
            c.email_addresses.some((e) => e.address.toLowerCase().includes(q)) ||
            c.phone_numbers.some((p) => p.number.includes(q))),
      );
      return answer(200, {
        data: rows.map((c) => project(c as unknown as Record<string, unknown>, query.fields)),
        meta: { records: rows.length, paging: {} },
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
    req.on('end', () => {
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
