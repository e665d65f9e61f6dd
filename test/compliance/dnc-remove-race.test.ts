// Two DELETE /api/compliance/dnc/{phone} of one listed number at the same moment: the entry is
// removed once, with one removal record, and each request is told of that record. The first
// request's delete of the entry is held back at the database (a relay in front of FerretDB), so
// the second comes while the number is still listed and its removal already recorded.
import { describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createFirm } from '../helpers/stack.js';
import { deleteCommandOn } from '../helpers/tcp-relay.js';
import { useStackBehindMongoRelay } from '../helpers/mongo-relay-stack.js';

const relayed = useStackBehindMongoRelay();

const removals = () => relayed.stack.services.mongo.db.collection(COLLECTIONS.dncRemovals);

describe('a number taken off the do-not-call list by two requests at once', () => {
  it('is removed once: one removal record, which both requests answer', async () => {
    const firm = await createFirm(relayed.stack);
    const phone = '+13125550177';
    const added = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [phone] });
    expect(added.body).toMatchObject({ added: 1 });
    const path = `/api/compliance/dnc/${encodeURIComponent(phone)}?firmSlug=${firm.slug}`;

    // The first request's delete of the entry is held at the database.
    const held = relayed.relay.holdRequest(deleteCommandOn(COLLECTIONS.dncEntries));
    const first = firm.client.delete(`${path}&reason=first`);
    let second;
    try {
      await held.seen;
      second = await firm.client.delete(`${path}&reason=second`);
    } finally {
      held.release();
    }
    const answers = [await first, second];
    for (const res of answers) expect(res.status, JSON.stringify(res.body)).toBe(200);
    const records = await removals().find({ phone }).toArray();
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ firm: firm.slug, reason: 'first' });
    expect(answers.map((r) => r.body.removal_id)).toEqual([records[0]!._id, records[0]!._id]);
    expect(answers.map((r) => r.body.reason)).toEqual(['first', 'first']);
    const list = await firm.client.get(`/api/compliance/dnc?firmSlug=${firm.slug}`);
    expect(list.body.entries).toEqual([]);

    // Listed again, then taken off again: a removal of its own, the first one kept as it was.
    await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [phone] });
    const again = await firm.client.delete(`${path}&reason=again`);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.removal_id).not.toBe(records[0]!._id);
    expect((await removals().find({ phone }).toArray()).map((r) => r.reason).sort()).toEqual([
      'again',
      'first',
    ]);
  });
});
