// The tests' stacks (test/helpers/stack.ts): a stopped stack's database is taken by the fork's
// next stack, emptied — a collection with a few documents by a delete, one a test filled by a
// drop — and made whole again by the release's ensureIndexes. The next stack must find every
// collection empty and every index there, whichever way each was emptied.
import { describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { startStack } from '../helpers/stack.js';

const indexNames = async (stack: Awaited<ReturnType<typeof startStack>>, name: string) =>
  (await stack.services.mongo.db.collection(name).listIndexes().toArray()).map((i) => String(i.name)).sort();

describe("a stopped stack's database, taken by the next stack", () => {
  it('is empty, a filled collection and a lightly written one alike, with every index', async () => {
    const first = await startStack();
    const db = first.services.mongo.db;
    const indexesBefore = {
      contacts: await indexNames(first, COLLECTIONS.contacts),
      leads: await indexNames(first, COLLECTIONS.leads),
    };
    expect(indexesBefore.contacts).toContain('firm_created_id');
    // Filled: past the size where the collection is dropped. Lightly written: a few documents.
    await db
      .collection(COLLECTIONS.contacts)
      .insertMany(
        Array.from(
          { length: 250 },
          (_, i) => ({ _id: `contact-${i}`, firm: 'reuse', created_at: new Date() }) as never,
        ),
      );
    await db
      .collection(COLLECTIONS.leads)
      .insertMany(Array.from({ length: 3 }, (_, i) => ({ _id: `lead-${i}`, firm: 'reuse' }) as never));
    const name = db.databaseName;
    await first.stop();

    const next = await startStack();
    try {
      const reused = next.services.mongo.db;
      expect(reused.databaseName, 'the same database, taken by the next stack').toBe(name);
      expect(await reused.collection(COLLECTIONS.contacts).countDocuments({})).toBe(0);
      expect(await reused.collection(COLLECTIONS.leads).countDocuments({})).toBe(0);
      expect(await indexNames(next, COLLECTIONS.contacts)).toEqual(indexesBefore.contacts);
      expect(await indexNames(next, COLLECTIONS.leads)).toEqual(indexesBefore.leads);
      // And it serves: a firm made and read back over the API.
      const created = await next.admin.post('/api/firms', { slug: 'reuse-firm', name: 'Reuse' });
      expect(created.status).toBe(200);
    } finally {
      await next.stop();
    }
  });
});
