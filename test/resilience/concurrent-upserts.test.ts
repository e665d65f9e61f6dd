// Upserts by _id that another writer of the same document meets (core/platform/db/upsert.ts): two
// upserts of one new _id at once both find nothing and both insert, and FerretDB answers the
// second insert with a duplicate key where MongoDB would make the write again. Each of these
// writes must succeed whoever comes first, and leave one document holding one of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Collection } from 'mongodb';
import { replaceById, updateById } from '../../core/platform/db/upsert.js';
import { rand, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

interface Doc {
  _id: string;
  writer?: number;
  high?: number;
  note?: string;
}
const fresh = (): Collection<Doc> => stack.services.mongo.db.collection<Doc>(`upserts_${rand(6)}`);
/** Enough pairs that writes meeting in the store is certain, not luck (most pairs meet on FerretDB). */
const PAIRS = 60;
const ids = Array.from({ length: PAIRS }, (_, i) => `doc_${i}`);

describe('upserts by _id made at the same moment', () => {
  it('replaceById: both writers succeed, each document is one of theirs, and exactly one made it', async () => {
    const docs = fresh();
    const results = await Promise.allSettled(
      ids.flatMap((id) => [1, 2].map((writer) => replaceById(docs, id, { writer }))),
    );
    expect(results.filter((r) => r.status === 'rejected').map((r) => String(r.reason))).toEqual([]);
    const made = results.map((r) => (r as PromiseFulfilledResult<boolean>).value);
    for (let i = 0; i < PAIRS; i++) expect([made[2 * i], made[2 * i + 1]].sort()).toEqual([false, true]);
    const stored = await docs.find({}).sort({ _id: 1 }).toArray();
    expect(stored.map((d) => d._id)).toEqual([...ids].sort());
    for (const d of stored) expect([1, 2]).toContain(d.writer);
  });

  it('updateById: both updates land on the one document made ($max keeps the higher, $set the last)', async () => {
    const docs = fresh();
    const results = await Promise.allSettled(
      ids.flatMap((id) =>
        [5, 9].map((high) => updateById(docs, id, { $max: { high }, $set: { note: 'x' } })),
      ),
    );
    expect(results.filter((r) => r.status === 'rejected').map((r) => String(r.reason))).toEqual([]);
    const stored = await docs.find({}).toArray();
    expect(stored).toHaveLength(PAIRS);
    for (const d of stored) expect(d).toMatchObject({ high: 9, note: 'x' });
  });

  it('a write refused for another reason is refused as it was, and changes nothing', async () => {
    const docs = fresh();
    await docs.insertOne({ _id: 'doc_text', note: 'text' });
    // $inc of a text field: the store refuses it every time.
    await expect(updateById(docs, 'doc_text', { $inc: { note: 1 } as never })).rejects.toMatchObject({
      code: 14,
    });
    expect(await docs.find({}).toArray()).toEqual([{ _id: 'doc_text', note: 'text' }]);
  });
});
