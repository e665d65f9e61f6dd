// An import whose attempt failed half-way (after claiming keys, before releasing those of its
// duplicate rows) still holds those claims until its retry runs. Another import of the firm that
// takes the firm's turn in between must not count its rows duplicates of claims no contact will
// ever hold: it waits for the unfinished import, as a worker waits for the firm's turn.
import { setTimeout as sleep } from 'node:timers/promises';
import { Collection } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runContactImport } from '../../core/domain/contacts/import-rows.js';
import type { ImportResult } from '../../core/domain/contacts/import-record.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { RecordBusyError } from '../../core/platform/redis-mutex.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { contactKeysOf, contactsOf, expectNoTwins } from './support.js';

let stack: Stack;

beforeAll(async () => {
  // No workers: the test runs each import's job itself. Every import answers 202.
  stack = await startStack({ env: { CONTACTS_IMPORT_WAIT_MS: '0' } });
});
afterAll(async () => stack?.stop());

type Firm = Awaited<ReturnType<typeof createFirm>>;

async function accepted(firm: Firm, contacts: unknown[]): Promise<string> {
  const res = await firm.client.post('/api/contacts/import', { firmSlug: firm.slug, contacts });
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(202);
  return res.body.job_id as string;
}

const run = (firm: Firm, importId: string) =>
  runContactImport(stack.services, { importId, firm: firm.slug, defaultCountry: 'US' });

/** Runs an import's job as the worker does: while the firm's turn is busy it steps aside and tries again. */
async function runAsWorker(firm: Firm, importId: string): Promise<ImportResult> {
  for (;;) {
    try {
      return await run(firm, importId);
    } catch (err) {
      if (!(err instanceof RecordBusyError)) throw err;
      await sleep(100);
    }
  }
}

/** Runs the import's job once with the release of its duplicate rows' claims failing (the store failed). */
async function failAfterClaiming(firm: Firm, importId: string): Promise<void> {
  const deleteMany = Collection.prototype.deleteMany;
  const spy = vi.spyOn(Collection.prototype, 'deleteMany').mockImplementation(function (
    this: Collection,
    ...args: Parameters<Collection['deleteMany']>
  ) {
    if (this.collectionName === COLLECTIONS.contactKeys) throw new Error('connection reset');
    return deleteMany.apply(this, args);
  });
  try {
    await expect(run(firm, importId)).rejects.toThrow('connection reset');
  } finally {
    spy.mockRestore();
  }
  expect(await contactKeysOf(stack).countDocuments({ import_id: importId })).toBe(1);
}

describe('an import whose attempt failed after claiming', () => {
  it('holds up the firm’s next import until its retry: that one imports the email no contact has', async () => {
    const firm = await createFirm(stack);
    const existing = await accepted(firm, [{ phone: '+12125550171', email: 'first@example.com' }]);
    expect(await run(firm, existing)).toMatchObject({ imported: 1 });

    // A duplicate of that contact by its phone, with a new email: the attempt claims the email,
    // then the store fails as the claims of its duplicate rows are released.
    const a = await accepted(firm, [{ phone: '+1 212 555 0171', email: 'second@example.com' }]);
    await failAfterClaiming(firm, a);

    // While its retry waits for its backoff, another import of the firm with that email alone.
    const b = await accepted(firm, [{ email: 'Second@example.com' }]);
    const second = runAsWorker(firm, b);
    await sleep(1000);
    // The first import's retry.
    expect(await runAsWorker(firm, a)).toMatchObject({ imported: 0, duplicates: 1, errors: 0 });
    expect(await second).toMatchObject({ imported: 1, duplicates: 0, errors: 0 });

    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts.map((c) => c.email).sort()).toEqual(['first@example.com', 'second@example.com']);
    expect(await contactsOf(stack).countDocuments({ firm: firm.slug, email: 'second@example.com' })).toBe(1);
  });

  it('is rolled back when its job was given up, and the next import goes on at once', async () => {
    const firm = await createFirm(stack);
    const existing = await accepted(firm, [{ phone: '+12125550172', email: 'third@example.com' }]);
    expect(await run(firm, existing)).toMatchObject({ imported: 1 });
    const a = await accepted(firm, [{ phone: '+12125550172', email: 'fourth@example.com' }]);
    await failAfterClaiming(firm, a);
    // As when BullMQ gives the job up without another attempt (it stalled too often).
    await stack.services.queues.contacts.remove(a);

    const b = await accepted(firm, [{ email: 'fourth@example.com' }]);
    expect(await run(firm, b)).toMatchObject({ imported: 1, duplicates: 0, errors: 0 });
    expect((await firm.client.get(`/api/contacts/import/${a}`)).body).toMatchObject({ status: 'failed' });
    expect(await contactKeysOf(stack).countDocuments({ import_id: a })).toBe(0);
    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts.map((c) => c.email).sort()).toEqual(['fourth@example.com', 'third@example.com']);
  });
});
