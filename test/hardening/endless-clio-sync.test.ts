// A firm's Clio at a base URL the firm chooses (a pasted token with crm.base_url) whose contact
// listing never ends: every page has a `meta.paging.next`. A sync must stop within its bounds
// (rows, pages, time), leaving the database within them, and two firms syncing such a Clio at
// once must not make a third firm's import wait for their syncs to end: each firm gets its
// share of the contacts queue (docs/contacts.md#limits).
//
// The endless Clio is a tiny server of this test: the Clio fake (test/fakes/clio-server.ts)
// serves a finite list by its document. Its answers are shaped as Clio's v4 listing is
// ({data, meta: {paging: {next}}}, next links without `.json`).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setFirmCrm } from '../../core/domain/firms/firms.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createLogger } from '../../core/platform/logger.js';
import { createServices } from '../../core/wiring/services.js';
import { startWorkers, type Workers } from '../../workers/runner.js';
import { processors } from '../../workers/processors/index.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { startSync } from '../contacts/clio-support.js';
import { contactsOf, importsOf } from '../contacts/support.js';

const MAX_ROWS = 1000;
const MAX_PAGES = 30;
const SLICE_PAGES = 2;

interface EndlessClio {
  url: string;
  /** Listing pages served so far. */
  pages: number;
  close(): Promise<void>;
}

/** A Clio whose listing never ends: `rows` Persons a page (each new), answered after `delayMs`. */
async function startEndlessClio(tag: string, rows: number, delayMs = 0): Promise<EndlessClio> {
  const state = { pages: 0 };
  let base = '';
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', base);
    if (req.method !== 'GET' || !/^\/api\/v4\/contacts(\.json)?$/.test(url.pathname)) {
      res.writeHead(404).end();
      return;
    }
    const n = Number(url.searchParams.get('page_token') ?? '0');
    state.pages += 1;
    const data = Array.from({ length: rows }, (_, i) => {
      const id = n * rows + i + 1;
      const email = `p${id}@${tag}.example`;
      return {
        id,
        type: 'Person',
        name: `Person ${id}`,
        first_name: 'Person',
        last_name: String(id),
        primary_email_address: email,
        primary_phone_number: null,
        email_addresses: [{ address: email, primary: true }],
        phone_numbers: [],
        updated_at: new Date().toISOString(),
      };
    });
    const next = new URL('/api/v4/contacts', base);
    for (const [k, v] of url.searchParams) if (k !== 'page_token') next.searchParams.set(k, v);
    next.searchParams.set('page_token', String(n + 1));
    const body = JSON.stringify({ data, meta: { paging: { next: next.toString() } } });
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(body), delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    get pages() {
      return state.pages;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let stack: Stack;
let workers: Workers | undefined;
const servers: EndlessClio[] = [];

beforeAll(async () => {
  stack = await startStack({
    env: {
      CONTACTS_SYNC_MAX_ROWS: String(MAX_ROWS),
      CONTACTS_SYNC_MAX_PAGES: String(MAX_PAGES),
      CONTACTS_SYNC_SLICE_PAGES: String(SLICE_PAGES),
      CONTACTS_IMPORT_WAIT_MS: '0',
    },
  });
  workers = startInProcessWorkers(stack);
});
afterAll(async () => {
  await workers?.stop();
  await stack?.stop();
  await Promise.all(servers.map((s) => s.close()));
});

async function firmWithClio(clio: EndlessClio) {
  const firm = await createFirm(stack);
  await setFirmCrm(stack.services, firm.slug, {
    provider: 'clio',
    access_token: 'pasted_token_endless',
    base_url: clio.url,
  });
  return firm;
}

const syncOf = async (firm: { client: Stack['admin'] }, jobId: string) => {
  const res = await firm.client.get(`/api/contacts/sync/${jobId}`);
  expect(res.status).toBe(200);
  return res.body as { status: string; pages: number; imported: number; message?: string };
};

/** Waits until the sync ended, or until its Clio served `pages` pages (it does not end). */
async function endOrPages(firm: { client: Stack['admin'] }, jobId: string, clio: EndlessClio, pages: number) {
  return eventually(
    async () => {
      const sync = await syncOf(firm, jobId);
      if (sync.status === 'running') expect(clio.pages).toBeGreaterThan(pages);
      return sync;
    },
    240_000,
    100,
  );
}

const storedOf = (firm: string) => contactsOf(stack).countDocuments({ firm });

describe('an endless Clio listing', () => {
  it('a sync stops at its row bound: the database holds at most that many of its contacts', async () => {
    const clio = await startEndlessClio('rows', 100);
    servers.push(clio);
    const firm = await firmWithClio(clio);
    const jobId = await startSync(firm.client, firm.slug);
    const sync = await endOrPages(firm, jobId, clio, 5 * (MAX_ROWS / 100));
    const stored = await storedOf(firm.slug);
    const bytes = (
      await stack.services.mongo.db.command({ collStats: COLLECTIONS.contacts }).catch(() => ({ size: 0 }))
    ).size as number;
    console.log(
      `rows bound ${MAX_ROWS}: sync ${sync.status} after ${sync.pages} pages, ${sync.imported} imported ("${sync.message}"); ` +
        `Clio served ${clio.pages} pages; the firm's contacts stored ${stored} (contacts collection ${bytes} bytes)`,
    );
    expect(sync.status).toBe('failed');
    expect(sync.message).toMatch(/at most 1,000 contacts/);
    expect(stored).toBeLessThanOrEqual(MAX_ROWS);
    expect(clio.pages).toBeLessThanOrEqual(MAX_ROWS / 100 + 1);
  }, 300_000);

  it('a sync of empty pages stops at its page bound', async () => {
    const clio = await startEndlessClio('empty', 0);
    servers.push(clio);
    const firm = await firmWithClio(clio);
    const jobId = await startSync(firm.client, firm.slug);
    const sync = await endOrPages(firm, jobId, clio, 5 * MAX_PAGES);
    console.log(
      `pages bound ${MAX_PAGES}: sync ${sync.status} after ${sync.pages} pages; Clio served ${clio.pages}`,
    );
    expect(sync.status).toBe('failed');
    expect(sync.message).toMatch(/at most 30 pages/);
    expect(clio.pages).toBeLessThanOrEqual(MAX_PAGES + 1);
  }, 300_000);

  it('a sync stops at its time bound', async () => {
    // A stack of its own whose bound is a second (the file's is an hour), and a Clio of empty
    // pages at 400 ms each: neither the row nor the page bound can come first, and nothing but
    // the clock moves the sync to its end (the record is the sync's alone to write).
    const timed = await startStack({
      env: { CONTACTS_SYNC_MAX_MS: '1000', CONTACTS_SYNC_SLICE_PAGES: String(SLICE_PAGES) },
    });
    const timedWorkers = startWorkers(
      createServices(timed.config, createLogger('silent', 'test'), 'worker'),
      processors,
    );
    try {
      const clio = await startEndlessClio('slow', 0, 400);
      servers.push(clio);
      const firm = await createFirm(timed);
      await setFirmCrm(timed.services, firm.slug, {
        provider: 'clio',
        access_token: 'pasted_token_endless',
        base_url: clio.url,
      });
      const jobId = await startSync(firm.client, firm.slug);
      const sync = await eventually(
        async () => {
          const state = await syncOf(firm, jobId);
          expect(state.status).not.toBe('running');
          return state;
        },
        120_000,
        100,
      );
      console.log(`time bound: sync ${sync.status} after ${sync.pages} pages; Clio served ${clio.pages}`);
      expect(sync.status).toBe('failed');
      expect(sync.message).toMatch(/for at most 1 second, and Clio had more/);
      expect(sync.pages).toBeLessThan(MAX_PAGES);
      expect(clio.pages).toBeLessThanOrEqual(sync.pages + 1);
    } finally {
      await timedWorkers.stop();
      await timed.stop();
    }
  }, 300_000);

  it("two firms' endless syncs do not hold back a third firm's import", async () => {
    const clioA = await startEndlessClio('a', 100, 150);
    const clioB = await startEndlessClio('b', 100, 150);
    servers.push(clioA, clioB);
    const a = await firmWithClio(clioA);
    const b = await firmWithClio(clioB);
    const c = await createFirm(stack);
    const syncA = await startSync(a.client, a.slug);
    const syncB = await startSync(b.client, b.slug);
    // Both syncs hold a contacts slot of the worker (it has two).
    await eventually(async () => {
      expect(clioA.pages).toBeGreaterThan(0);
      expect(clioB.pages).toBeGreaterThan(0);
    });
    const rows = Array.from({ length: 50 }, (_, i) => ({
      name: `Client ${i}`,
      email: `c${i}@firm-c.example`,
    }));
    const res = await c.client.post('/api/contacts/import', { firmSlug: c.slug, contacts: rows });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const importId = res.body.job_id as string;
    // Until C's import is done, or A's sync read far more than its slice a few times over.
    const done = await eventually(
      async () => {
        const record = await importsOf(stack).findOne({ _id: importId });
        if (record?.status !== 'completed') expect(clioA.pages).toBeGreaterThan(8 * SLICE_PAGES);
        return record?.status === 'completed';
      },
      240_000,
      50,
    );
    const [stateA, stateB] = [await syncOf(a, syncA), await syncOf(b, syncB)];
    console.log(
      `third firm's import ${done ? 'completed' : 'not completed'} while A's sync was ${stateA.status} at ${stateA.pages} pages ` +
        `(Clio A served ${clioA.pages}) and B's ${stateB.status} at ${stateB.pages} (Clio B served ${clioB.pages})`,
    );
    expect(done, "the third firm's import completed").toBe(true);
    expect(stateA.status).toBe('running');
    expect(stateB.status).toBe('running');
    expect(await storedOf(c.slug)).toBe(50);
  }, 300_000);
});
