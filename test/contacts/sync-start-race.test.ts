// Two POST /api/contacts/sync of one firm at the same moment: one sync runs (202), the other is
// refused with 409 sync_running naming it. The first request's write of its sync's record is held
// back at the database (a relay in front of FerretDB), so the second comes while the first has
// taken the firm's turn and not yet written its record.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm } from '../helpers/stack.js';
import { insertCommandOn } from '../helpers/tcp-relay.js';
import { useStackBehindMongoRelay } from '../helpers/mongo-relay-stack.js';
import { finished } from './clio-support.js';

let clio: FakeClio;

const relayed = useStackBehindMongoRelay();
beforeAll(async () => {
  clio = await startFakeClio();
});
afterAll(async () => {
  await clio?.close();
});

describe('two contacts syncs of one firm started at once', () => {
  it('one runs and the other is refused with 409 sync_running', async () => {
    const firm = await createFirm(relayed.stack, {
      crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    });
    clio.contacts.push({
      id: 9300,
      type: 'Person',
      first_name: 'Ada',
      last_name: 'Race',
      name: 'Ada Race',
      email_addresses: [{ name: 'Home', address: 'ada.race@example.com', primary: true }],
      phone_numbers: [],
      updated_at: new Date(Date.now() - 86_400_000).toISOString(),
    });
    const body = { firmSlug: firm.slug, source: 'clio' };
    // The first request's write of its sync's record is held at the database.
    const held = relayed.relay.holdRequest(insertCommandOn(COLLECTIONS.contactSyncs));
    const first = firm.client.post('/api/contacts/sync', body);
    let second;
    try {
      await held.seen;
      second = await firm.client.post('/api/contacts/sync', body);
    } finally {
      held.release();
    }
    const answers = [await first, second];
    const accepted = answers.filter((r) => r.status === 202);
    expect(answers.map((r) => r.status).sort(), JSON.stringify(answers.map((r) => r.body))).toEqual([
      202, 409,
    ]);
    const jobId = accepted[0]!.body.job_id as string;
    const refused = answers.find((r) => r.status === 409)!;
    expectError(refused, 409, 'sync_running');
    expect(refused.body.error.message).toContain(jobId);
    expect(await finished(firm.client, jobId)).toMatchObject({ status: 'completed', imported: 1 });
  });
});
