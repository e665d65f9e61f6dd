import { expect } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { ContactDoc, ContactKeyDoc } from '../../core/domain/contacts/contacts.js';
import type { ApiClient, ApiResponse } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import type { Stack } from '../helpers/stack.js';

export const contactsOf = (stack: Stack) =>
  stack.services.mongo.db.collection<ContactDoc>(COLLECTIONS.contacts);
export const contactKeysOf = (stack: Stack) =>
  stack.services.mongo.db.collection<ContactKeyDoc>(COLLECTIONS.contactKeys);
export const importsOf = (stack: Stack) =>
  stack.services.mongo.db.collection<{
    _id: string;
    firm: string;
    status: string;
    stage: string;
    rows: number;
  }>(COLLECTIONS.contactImports);

export interface ImportSummary {
  imported: number;
  duplicates: number;
  errors: number;
  error_rows: Array<{ index: number; reason: string }>;
}

/** POST /api/contacts/import; a 202 is followed to its result by polling the job. */
export async function importRows(
  client: ApiClient,
  firmSlug: string,
  contacts: unknown[],
  extra: Record<string, unknown> = {},
): Promise<ImportSummary> {
  const res = await client.post('/api/contacts/import', { firmSlug, contacts, ...extra });
  if (res.status === 202) return (await pollJob(client, res.body.job_id)).body as ImportSummary;
  expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
  return res.body as ImportSummary;
}

/** GET /api/contacts/import/{job_id} until it is no longer 202. */
export function pollJob(client: ApiClient, jobId: string, timeoutMs = 60_000): Promise<ApiResponse> {
  return eventually(
    async () => {
      const res = await client.get(`/api/contacts/import/${jobId}`);
      expect(res.status).not.toBe(202);
      return res;
    },
    timeoutMs,
    50,
  );
}

/** Every contact of a firm through GET /api/contacts, page by page. */
export async function listAll(client: ApiClient, firmSlug: string, q?: string, limit = 1000): Promise<any[]> {
  const all: any[] = [];
  let cursor = '';
  do {
    const params = new URLSearchParams({ firmSlug, limit: String(limit), cursor });
    if (q !== undefined) params.set('q', q);
    const res = await client.get(`/api/contacts?${params.toString()}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    all.push(...res.body.contacts);
    cursor = res.body.next_cursor;
  } while (cursor !== '');
  return all;
}

/** No two contacts of the firm share a phone or an email, in the store itself. */
export async function expectNoTwins(stack: Stack, firm: string): Promise<ContactDoc[]> {
  const contacts = await contactsOf(stack).find({ firm }).toArray();
  const phones = contacts.flatMap((c) => (c.phone === undefined ? [] : [c.phone]));
  const emails = contacts.flatMap((c) => (c.email === undefined ? [] : [c.email]));
  expect(new Set(phones).size).toBe(phones.length);
  expect(new Set(emails).size).toBe(emails.length);
  return contacts;
}
