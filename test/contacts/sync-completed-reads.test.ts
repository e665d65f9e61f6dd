// A contacts sync shown completed (GET /api/contacts/sync/{job_id}) is the one the next sync reads
// changes since: a client that polls the sync until it completed and starts the next one at once
// gets an incremental run (Clio asked with updated_since), not a full one. The job's write of the
// firm's last-completed mark is held back at the database (a relay in front of FerretDB), so the
// test sees what a client reading between the job's writes would see.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { UPDATED_SINCE_MARGIN_MS } from '../../core/domain/contacts/contact-sync.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { createFirm } from '../helpers/stack.js';
import { updateCommandOn } from '../helpers/tcp-relay.js';
import { useStackBehindMongoRelay } from '../helpers/mongo-relay-stack.js';
import { finished, startSync } from './clio-support.js';

let clio: FakeClio;

const relayed = useStackBehindMongoRelay();
beforeAll(async () => {
  clio = await startFakeClio();
});
afterAll(async () => {
  await clio?.close();
});

const LISTING = /^\/api\/v4\/contacts(\.json)?$/;

describe('a contacts sync shown completed, and the next one', () => {
  it('the next sync started at once reads only what changed since the completed one', async () => {
    const firm = await createFirm(relayed.stack, {
      crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    });
    for (let i = 0; i < 3; i++) {
      clio.contacts.push({
        id: 9100 + i,
        type: 'Person',
        first_name: `First${i}`,
        last_name: `Last${i}`,
        name: `First${i} Last${i}`,
        email_addresses: [{ name: 'Home', address: `synced${i}@example.com`, primary: true }],
        phone_numbers: [],
        updated_at: new Date(Date.now() - 86_400_000).toISOString(),
      });
    }
    // The first sync's write of the firm's last-completed mark is held at the database.
    const held = relayed.relay.holdRequest(updateCommandOn(COLLECTIONS.contactSyncMarks));
    const first = await startSync(firm.client, firm.slug);
    try {
      await held.seen;
      // Not shown completed while the mark that makes it the last completed sync is not written.
      const meanwhile = await firm.client.get(`/api/contacts/sync/${first}`);
      expect(meanwhile.status).toBe(200);
      expect(meanwhile.body.status).toBe('running');
    } finally {
      held.release();
    }
    expect(await finished(firm.client, first)).toMatchObject({ status: 'completed', imported: 3 });
    const started = (await relayed.stack.services.mongo.db
      .collection<{ _id: string; started_at: Date }>(COLLECTIONS.contactSyncs)
      .findOne({ _id: first }))!.started_at;

    // At once, with no wait: the next sync is incremental, from the first one's start.
    const before = clio.requests.length;
    const second = await startSync(firm.client, firm.slug);
    expect(await finished(firm.client, second)).toMatchObject({ status: 'completed', imported: 0 });
    const asked = clio.requests.slice(before).filter((r) => LISTING.test(r.path));
    expect(asked).toHaveLength(1);
    expect(asked[0]!.query.updated_since).toBeDefined();
    expect(Date.parse(asked[0]!.query.updated_since!)).toBe(started.getTime() - UPDATED_SINCE_MARGIN_MS);
  });
});
