// Our Clio client (core/integrations/crm/clio.ts) against the spec-checked Clio
// (test/fakes/clio-server.ts, which judges every request by Clio's v4 OpenAPI document and
// answers to its schemas): every call the client makes — contact search, create and the listing
// with its paging, matter create and lookup, task and note create and lookup, the OAuth token grants and their refusals — and
// what the fake refuses as Clio does (a `fields=`
// name the document does not have, an enum value in the wrong case).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClioClient, CrmError } from '../../core/integrations/crm/clio.js';
import {
  ClioGrantRefusedError,
  clioWhoAmI,
  requestClioToken,
} from '../../core/integrations/crm/clio-oauth.js';
import { clioContactRow } from '../../core/domain/contacts/clio-contact-row.js';
import { startFakeClio, type ClioContactRecord, type FakeClio } from '../fakes/clio-server.js';

const policy = { allowHttpAndLoopback: true };
let clio: FakeClio;
let proxied: FakeClio;
let elsewhere: FakeClio;

beforeAll(async () => {
  [clio, proxied, elsewhere] = await Promise.all([
    startFakeClio(),
    // Clio reached through a path of its own (a firm's proxy): the base URL has a path prefix.
    startFakeClio('clio-test-token', { basePath: '/clio-proxy' }),
    startFakeClio(),
  ]);
});
afterAll(async () => {
  await Promise.all([clio?.close(), proxied?.close(), elsewhere?.close()]);
});

const clientOf = (fake: FakeClio) =>
  new ClioClient({ baseUrl: fake.baseUrl, accessToken: fake.token, policy });

function person(id: number, extra: Partial<ClioContactRecord> = {}): ClioContactRecord {
  return {
    id,
    type: 'Person',
    first_name: `First${id}`,
    last_name: `Last${id}`,
    name: `First${id} Last${id}`,
    email_addresses: [
      { name: 'Work', address: `old${id}@example.com`, primary: false },
      { name: 'Home', address: `p${id}@example.com`, primary: true },
    ],
    phone_numbers: [
      { name: 'Work', number: `+1415555${String(id % 10_000).padStart(4, '0')}`, primary: true },
    ],
    updated_at: '2026-01-01T00:00:00Z',
    ...extra,
  };
}

/** Reads the whole listing page by page as the sync does; the URLs it read. */
async function readAll(client: ClioClient) {
  const contacts = [];
  const urls: string[] = [];
  let url: string | null = client.firstContactsPageUrl(100, null);
  while (url !== null) {
    urls.push(url);
    const page = await client.contactsPage(url);
    contacts.push(...page.contacts);
    url = page.next;
  }
  return { contacts, urls };
}

describe('the contact listing (the sync)', () => {
  it('asks only for fields the document has, and gets each Person with its primary email and phone', async () => {
    clio.reset();
    clio.contacts.push(person(1), person(2, { phone_numbers: [] }));
    const { contacts } = await readAll(clientOf(clio));
    expect(clio.refusals).toEqual([]);
    expect(contacts.map((c) => clioContactRow(c))).toEqual([
      {
        source: 'clio',
        external_id: '1',
        first_name: 'First1',
        last_name: 'Last1',
        name: 'First1 Last1',
        phone: '+14155550001',
        email: 'p1@example.com',
      },
      {
        source: 'clio',
        external_id: '2',
        first_name: 'First2',
        last_name: 'Last2',
        name: 'First2 Last2',
        email: 'p2@example.com',
      },
    ]);
  });

  it('follows meta.paging.next without .json, under a base URL with a path of its own', async () => {
    proxied.reset();
    for (let id = 1; id <= 250; id++) proxied.contacts.push(person(id));
    const { contacts, urls } = await readAll(clientOf(proxied));
    expect(contacts.map((c) => c.id)).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
    expect(urls).toHaveLength(3);
    expect(new URL(urls[1]!).pathname).toBe('/clio-proxy/api/v4/contacts');
    expect(proxied.refusals).toEqual([]);
  });

  it('refuses a next link of another origin, another listing or outside the base path; sends no token there', async () => {
    const client = clientOf(proxied);
    elsewhere.reset();
    const base = new URL(proxied.baseUrl);
    const links = [
      `${elsewhere.url}/clio-proxy/api/v4/contacts?page_token=MQ`,
      `${base.origin}/clio-proxy/api/v4/matters?page_token=MQ`,
      `${base.origin}/api/v4/contacts?page_token=MQ`,
      `${base.origin}/clio-proxy/api/v4/contacts.json/../matters.json?page_token=MQ`,
      'not a url',
    ];
    for (const link of links) {
      const err = await client.contactsPage(link).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, link).toBeInstanceOf(CrmError);
      expect((err as CrmError).final, link).toBe(true);
    }
    expect(elsewhere.requests).toEqual([]);
  });
});

describe('contact search, read and create', () => {
  it('finds a Person by what was typed: the search is judged and answered with the asked fields only', async () => {
    clio.reset();
    clio.contacts.push(
      person(10, { phone_numbers: [{ name: 'Work', number: '(212) 555-0142', primary: true }] }),
      { ...person(11), type: 'Company', name: 'Acme (212) 555-0142' },
    );
    const client = clientOf(clio);
    expect(await client.findContacts('+12125550142')).toEqual([]);
    expect(await client.findContacts('(212) 555-0142')).toEqual([
      {
        id: 10,
        name: 'First10 Last10',
        emails: ['old10@example.com', 'p10@example.com'],
        phones: ['(212) 555-0142'],
      },
    ]);
    const asked = clio.requests.at(-1)!;
    expect(asked.query).toEqual({
      query: '(212) 555-0142',
      type: 'Person',
      fields: 'id,name,email_addresses{address},phone_numbers{number}',
      limit: '200',
    });
    expect(clio.refusals).toEqual([]);
  });

  it('reads one Person by id, and null for one Clio no longer has', async () => {
    const client = clientOf(clio);
    expect(await client.getContact(10)).toMatchObject({ id: 10, phones: ['(212) 555-0142'] });
    expect(await client.getContact(11)).toBeNull(); // a Company
    expect(await client.getContact(999_999)).toBeNull();
    expect(clio.refusals.map((r) => r.status)).toEqual([404]);
  });

  it('creates a Person with the body the document requires (type and name), its email and phone primary', async () => {
    clio.reset();
    const client = clientOf(clio);
    const id = await client.createPerson({
      first_name: 'Ana',
      last_name: 'Ruiz',
      email: 'ana@example.com',
      phone: '+12125550199',
    });
    expect(clio.writes('/api/v4/contacts.json')[0]!.body).toEqual({
      data: {
        type: 'Person',
        name: 'Ana Ruiz',
        first_name: 'Ana',
        last_name: 'Ruiz',
        email_addresses: [{ name: 'Other', address: 'ana@example.com', default_email: true }],
        phone_numbers: [{ name: 'Other', number: '+12125550199', default_number: true }],
      },
    });
    const [row] = (await client.contactsPage(client.firstContactsPageUrl(100, null))).contacts;
    expect(row).toMatchObject({
      id,
      primary_email_address: 'ana@example.com',
      email_addresses: [{ address: 'ana@example.com', primary: true }],
      phone_numbers: [{ number: '+12125550199', primary: true }],
    });
    const nameless = await client.createPerson({
      first_name: null,
      last_name: '+12125550100',
      email: null,
      phone: null,
    });
    expect(clio.writes('/api/v4/contacts.json')[1]!.body.data).toEqual({
      type: 'Person',
      name: '+12125550100',
      last_name: '+12125550100',
    });
    expect(nameless).toBeGreaterThan(id);
    expect(clio.refusals).toEqual([]);
  });
});

describe('matters', () => {
  it('creates a matter with status "pending" and finds it again by our reference', async () => {
    clio.reset();
    const client = clientOf(clio);
    const clientId = await client.createPerson({
      first_name: 'Bo',
      last_name: null,
      email: null,
      phone: null,
    });
    const id = await client.createMatter({
      clientId,
      description: 'Personal Injury — Bo (intake call)',
      status: 'pending',
      reference: 'call_abc',
    });
    expect(clio.matters).toEqual([
      {
        id,
        client_id: clientId,
        description: 'Personal Injury — Bo (intake call)',
        status: 'Pending',
        client_reference: 'call_abc',
      },
    ]);
    expect(await client.findMatterByReference(clientId, 'call_abc')).toBe(id);
    expect(await client.findMatterByReference(clientId, 'call_other')).toBeNull();
    expect(clio.refusals).toEqual([]);
  });

  it('finds the matter it made for a client of more than 200 matters (the newest first)', async () => {
    clio.reset();
    const client = clientOf(clio);
    const clientId = await client.createPerson({
      first_name: 'Many',
      last_name: 'Matters',
      email: 'many@example.com',
      phone: null,
    });
    for (let i = 0; i < 201; i++) {
      await client.createMatter({
        clientId,
        description: `Older ${i}`,
        status: 'open',
        reference: `old_${i}`,
      });
    }
    const id = await client.createMatter({
      clientId,
      description: 'Personal Injury — Many (intake call)',
      status: 'pending',
      reference: 'call_newest',
    });
    expect(await client.findMatterByReference(clientId, 'call_newest')).toBe(id);
    expect(clio.refusals).toEqual([]);
  });
});

describe('tasks and notes', () => {
  it('creates a task on a matter for the token’s user and a note on the matter and on the contact; finds each by our reference', async () => {
    clio.reset();
    const client = clientOf(clio);
    const contactId = await client.createPerson({
      first_name: 'Cy',
      last_name: null,
      email: null,
      phone: null,
    });
    const matterId = await client.createMatter({
      clientId: contactId,
      description: 'Fall — Cy',
      status: 'open',
      reference: 'wf_m',
    });
    const userId = await client.currentUserId();
    expect(userId).toBe(clio.users[0]!.id);
    const taskId = await client.createTask({
      name: 'Call Cy back',
      description: 'About the fall.\n\nWorkflow reference: wf_task1',
      dueAt: '2026-12-01T09:00:00.000Z',
      assignee: { type: 'User', id: userId },
      matterId,
    });
    expect(clio.tasks).toEqual([
      {
        id: taskId,
        name: 'Call Cy back',
        description: 'About the fall.\n\nWorkflow reference: wf_task1',
        due_at: '2026-12-01T09:00:00.000Z',
        assignee: { type: 'User', id: userId },
        matter_id: matterId,
      },
    ]);
    expect(await client.findTaskByReference('wf_task1', matterId)).toBe(taskId);
    expect(await client.findTaskByReference('wf_task2', matterId)).toBeNull();

    const onMatter = await client.createNote({
      subject: 'Intake',
      detail: 'Fell at work.\n\nWorkflow reference: wf_note1',
      matterId,
      contactId,
    });
    const onContact = await client.createNote({
      subject: 'First contact',
      detail: 'Workflow reference: wf_note2',
      matterId: null,
      contactId,
    });
    expect(clio.notes.map((n) => [n.id, n.type, n.matter_id, n.contact_id])).toEqual([
      [onMatter, 'Matter', matterId, contactId],
      [onContact, 'Contact', null, contactId],
    ]);
    expect(await client.findNoteByReference('wf_note1', { matterId, contactId })).toBe(onMatter);
    expect(await client.findNoteByReference('wf_note2', { matterId: null, contactId })).toBe(onContact);
    expect(await client.findNoteByReference('wf_note2', { matterId, contactId })).toBeNull();
    expect(clio.refusals).toEqual([]);
  });

  it('refuses, as the document says, a task without an assignee and a "Matter" note without a matter', async () => {
    clio.reset();
    const post = (path: string, data: unknown) =>
      fetch(`${clio.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${clio.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ data }),
      });
    const task = await post('/api/v4/tasks.json', { name: 'x', description: 'y' });
    expect(task.status).toBe(422);
    expect(((await task.json()) as any).error.message).toMatch(/assignee/);
    const note = await post('/api/v4/notes.json', { type: 'Matter', subject: 's', detail: 'd' });
    expect(note.status).toBe(422);
    expect(((await note.json()) as any).error.message).toMatch(/matter\.id/);
    expect(clio.tasks).toEqual([]);
    expect(clio.notes).toEqual([]);
  });
});

describe('what the spec-checked Clio refuses, as Clio does', () => {
  const get = (path: string, headers: Record<string, string> = { authorization: `Bearer ${clio.token}` }) =>
    fetch(`${clio.url}${path}`, { headers });

  it('a `fields=` name the document does not have: 400 with Clio’s error body', async () => {
    clio.reset();
    const res = await get(
      '/api/v4/contacts.json?type=Person&fields=id,email_addresses%7Baddress,default_email%7D',
    );
    const body = await res.json();
    console.log(`wrong fields= name → ${res.status} ${JSON.stringify(body)}`);
    expect(res.status).toBe(400);
    expect(body).toEqual({
      error: {
        type: 'InvalidFields',
        message: 'Invalid fields: email_addresses{default_email is not a field of this resource}',
      },
    });
    // Top-level, second-level nesting, braces on a plain field, and a syntax error, likewise.
    for (const fields of [
      'id,nickname',
      'id,company{id,company{id}}',
      'id,name{first}',
      'id,email_addresses{',
    ]) {
      const refused = await get(`/api/v4/contacts.json?fields=${encodeURIComponent(fields)}`);
      expect(refused.status, fields).toBe(400);
      expect(((await refused.json()) as any).error.type, fields).toBe('InvalidFields');
    }
  });

  it('an enum value in the wrong case ("Pending"): 422 with Clio’s error body; our client calls it final', async () => {
    clio.reset();
    const client = clientOf(clio);
    const clientId = await client.createPerson({
      first_name: 'Cy',
      last_name: null,
      email: null,
      phone: null,
    });
    const err = await client
      .createMatter({ clientId, description: 'x', status: 'Pending' as 'pending', reference: 'call_x' })
      .then(
        () => null,
        (e: unknown) => e as CrmError,
      );
    console.log(`wrong enum case → ${JSON.stringify(clio.refusals.at(-1))}`);
    expect(clio.refusals.at(-1)).toEqual({
      method: 'POST',
      path: '/api/v4/matters.json',
      status: 422,
      body: {
        error: {
          type: 'ArgumentError',
          message: 'body/data/status must be one of ["open","closed","pending"]',
        },
      },
    });
    expect(err).toBeInstanceOf(CrmError);
    expect(err!.status).toBe(422);
    expect(err!.final).toBe(true);
    expect(clio.matters).toEqual([]);
  });

  it('a query parameter or value off the document: 400; no bearer token: 401; an operation it lacks: 404', async () => {
    const bad = await get('/api/v4/contacts.json?type=person');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toMatch(/must be one of \["Company","Person"\]/);
    expect((await get('/api/v4/contacts.json?order=newest')).status).toBe(400);
    expect((await get('/api/v4/contacts.json?sort=id')).status).toBe(400);
    const anonymous = await get('/api/v4/contacts.json', {});
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({
      error: { type: 'AuthenticationError', message: 'The access token is invalid or has expired.' },
    });
    expect((await get('/api/v4/bills.json')).status).toBe(404);
  });

  it('without `fields=` a record is only its id and etag', async () => {
    clio.reset();
    clio.contacts.push(person(21));
    const body = await (await get('/api/v4/contacts.json')).json();
    expect(body).toEqual({ data: [{ id: 21, etag: expect.any(String) }], meta: { paging: {} } });
  });
});

describe('OAuth: the token endpoint and its refusals (RFC 6749 §5.2)', () => {
  const credentials = () => ({ clientId: clio.oauth.clientId, clientSecret: clio.oauth.clientSecret });
  const grant = (g: Parameters<typeof requestClioToken>[1], creds = credentials()) =>
    requestClioToken(clio.url, g, creds, policy).then(
      (tokens) => tokens,
      (e: unknown) => e,
    );
  async function codeFor(redirect: string): Promise<string> {
    const params = new URLSearchParams({
      response_type: 'code',
      client_id: clio.oauth.clientId,
      redirect_uri: redirect,
      state: 's',
    });
    const res = await fetch(`${clio.url}/oauth/authorize?${params}`, { redirect: 'manual' });
    return new URL(res.headers.get('location')!).searchParams.get('code')!;
  }
  const redirect = 'http://127.0.0.1:1/api/integrations/clio/callback';
  // The app's redirect URI, as registered in Clio's developer portal.
  beforeAll(() => {
    clio.oauth.redirectUris.push(redirect);
  });

  it('exchanges a code, refreshes (a new refresh token replaces the old), and uses the token', async () => {
    const tokens = (await grant({
      grant_type: 'authorization_code',
      code: await codeFor(redirect),
      redirect_uri: redirect,
    })) as Awaited<ReturnType<typeof requestClioToken>>;
    expect(tokens).toMatchObject({ access_token: expect.any(String), refresh_token: expect.any(String) });
    const renewed = (await grant({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
    })) as Awaited<ReturnType<typeof requestClioToken>>;
    expect(renewed.refresh_token).not.toBe(tokens.refresh_token);
    const client = new ClioClient({ baseUrl: clio.baseUrl, accessToken: renewed.access_token, policy });
    await expect(client.findContacts('nobody-by-this-name')).resolves.toEqual([]);
  });

  it("who_am_i: the token's user and their Clio firm, asked with fields the document's User has", async () => {
    clio.reset();
    const user = clio.addUser('Robin Approver', 'robin@approver.test', { id: 7, name: 'Approver & Co' });
    clio.oauth.approver = user;
    try {
      const tokens = (await grant({
        grant_type: 'authorization_code',
        code: await codeFor(redirect),
        redirect_uri: redirect,
      })) as Awaited<ReturnType<typeof requestClioToken>>;
      await expect(clioWhoAmI(clio.url, tokens.access_token, policy)).resolves.toEqual({
        id: user.id,
        name: 'Robin Approver',
        email: 'robin@approver.test',
        account: 'Approver & Co',
      });
      expect(clio.refusals).toEqual([]);
      // The static token is the first user's.
      await expect(clioWhoAmI(clio.url, clio.token, policy)).resolves.toMatchObject({
        id: clio.users[0]!.id,
      });
    } finally {
      clio.oauth.approver = clio.users[0]!;
    }
    // Deliberately wrong: a name the User resource does not have (the firm is `account{name}`).
    const wrong = await fetch(`${clio.url}/api/v4/users/who_am_i.json?fields=id,firm_name`, {
      headers: { authorization: `Bearer ${clio.token}` },
    });
    const body = await wrong.json();
    console.log(`who_am_i with a wrong fields= name → ${wrong.status} ${JSON.stringify(body)}`);
    expect(wrong.status).toBe(400);
    expect((body as any).error.type).toBe('InvalidFields');
  });

  it('a used or unknown code, and a revoked refresh token: invalid_grant (the firm’s grant)', async () => {
    const code = await codeFor(redirect);
    expect(
      await grant({ grant_type: 'authorization_code', code, redirect_uri: redirect }),
    ).not.toBeInstanceOf(Error);
    const reused = await grant({ grant_type: 'authorization_code', code, redirect_uri: redirect });
    expect(reused).toBeInstanceOf(ClioGrantRefusedError);
    expect((reused as ClioGrantRefusedError).error).toBe('invalid_grant');
    const tokens = (await grant({
      grant_type: 'authorization_code',
      code: await codeFor(redirect),
      redirect_uri: redirect,
    })) as Awaited<ReturnType<typeof requestClioToken>>;
    clio.oauth.revokeRefreshTokens(); // the user disconnected the app in Clio
    const revoked = await grant({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
    expect(revoked).toBeInstanceOf(ClioGrantRefusedError);
    expect((revoked as ClioGrantRefusedError).error).toBe('invalid_grant');
  });

  it('authorize refuses a redirect_uri the app did not register: an error page, no redirect, no code', async () => {
    const issued = clio.oauth.codes.size;
    for (const other of [
      'https://attacker.test/api/integrations/clio/callback',
      'http://127.0.0.1:1/api/integrations/clio/callback/other',
      undefined,
    ]) {
      const params = new URLSearchParams({
        response_type: 'code',
        client_id: clio.oauth.clientId,
        state: 's',
      });
      if (other !== undefined) params.set('redirect_uri', other);
      const res = await fetch(`${clio.url}/oauth/authorize?${params}`, { redirect: 'manual' });
      const page = await res.text();
      console.log(`authorize with redirect_uri ${other ?? '(none)'} → ${res.status} ${page}`);
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(page).toMatch(/^invalid_redirect_uri: /);
    }
    expect(clio.oauth.codes.size).toBe(issued);
    // The registered one is taken, its query aside (Doorkeeper's rule).
    expect(await codeFor(`${redirect}?from=clio`)).toMatch(/^code_/);
  });

  it('a code exchanged with another redirect_uri than its authorize request’s: 400 invalid_grant, the code kept', async () => {
    const code = await codeFor(redirect);
    const other = 'http://127.0.0.1:1/api/integrations/clio/elsewhere';
    const refused = await grant({ grant_type: 'authorization_code', code, redirect_uri: other });
    expect(refused).toBeInstanceOf(ClioGrantRefusedError);
    expect((refused as ClioGrantRefusedError).error).toBe('invalid_grant');
    expect((refused as ClioGrantRefusedError).description).toMatch(/does not match the redirection URI/);
    // Without one at all: invalid_request (Doorkeeper asks for the missing parameter).
    const missing = await fetch(`${clio.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        client_id: clio.oauth.clientId,
        client_secret: clio.oauth.clientSecret,
      }).toString(),
    });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: 'invalid_request' });
    // A refused exchange does not use the code up: with the authorize request's redirect_uri it works.
    expect(await grant({ grant_type: 'authorization_code', code, redirect_uri: redirect })).toMatchObject({
      access_token: expect.any(String),
    });
  });

  it('wrong client credentials: 401 invalid_client (the service’s own, not a firm’s)', async () => {
    const refused = await grant(
      { grant_type: 'refresh_token', refresh_token: 'whatever' },
      { clientId: clio.oauth.clientId, clientSecret: 'not-the-secret' },
    );
    expect(refused).toBeInstanceOf(ClioGrantRefusedError);
    expect((refused as ClioGrantRefusedError).error).toBe('invalid_client');
  });

  it('an expired access token: the API answers 401, and a token source refreshes once', async () => {
    clio.reset();
    const tokens = (await grant({
      grant_type: 'authorization_code',
      code: await codeFor(redirect),
      redirect_uri: redirect,
    })) as Awaited<ReturnType<typeof requestClioToken>>;
    clio.oauth.expireAccessTokens();
    let current = tokens.access_token;
    let renewals = 0;
    const client = new ClioClient({
      baseUrl: clio.baseUrl,
      policy,
      accessToken: {
        current: async () => current,
        renew: async () => {
          renewals++;
          const next = (await grant({
            grant_type: 'refresh_token',
            refresh_token: tokens.refresh_token!,
          })) as Awaited<ReturnType<typeof requestClioToken>>;
          current = next.access_token;
          return current;
        },
      },
    });
    await expect(client.findContacts('nobody-by-this-name')).resolves.toEqual([]);
    expect(renewals).toBe(1);
    expect(clio.requests.map((r) => r.authorization)).toEqual([
      `Bearer ${tokens.access_token}`,
      `Bearer ${current}`,
    ]);
  });
});
