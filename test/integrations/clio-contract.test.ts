// Our Clio client (core/integrations/crm/clio.ts) against the spec-checked Clio
// (test/fakes/clio-server.ts, which judges every request by Clio's v4 OpenAPI document and
// answers to its schemas): every call the client makes — contact search, create and the listing
// with its paging, matter create and lookup — and what the fake refuses as Clio does (a `fields=`
// name the document does not have, an enum value in the wrong case).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClioClient, CrmError } from '../../core/integrations/crm/clio.js';
import { clioContactRow } from '../../core/domain/contacts/clio-contact-row.js';
import { startFakeClio, type ClioContactRecord, type FakeClio } from '../fakes/clio-server.js';

const policy = { allowPrivate: true };
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
