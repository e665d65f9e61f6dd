import { expect } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import type { Stack } from '../helpers/stack.js';
import { connectClioInBrowser } from '../integrations/clio-oauth-browser.js';

// A firm's Clio, connected and synced over the API as the firm does it (docs/contacts.md#synced-from-clio),
// against the local Clio (test/fakes/clio-server.ts).

/** Connects the firm's Clio as its browser would: connect link → Clio's authorize → our callback → confirm. */
export async function connectClio(stack: Stack, firm: { slug: string; key: string }): Promise<void> {
  await connectClioInBrowser(stack.baseUrl, firm);
}

/** POST /api/contacts/sync {source: "clio"}: the sync job's id. */
export async function startSync(client: Stack['admin'], firmSlug: string): Promise<string> {
  const res = await client.post('/api/contacts/sync', { firmSlug, source: 'clio' });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body).toEqual({ job_id: expect.stringMatching(/^csy_/) });
  return res.body.job_id as string;
}

/** GET /api/contacts/sync/{job_id} until the sync is no longer running. */
export async function finished(client: Stack['admin'], jobId: string) {
  return eventually(
    async () => {
      const res = await client.get(`/api/contacts/sync/${jobId}`);
      expect(res.status).toBe(200);
      expect(res.body.status).not.toBe('running');
      return res.body;
    },
    240_000,
    100,
  );
}
