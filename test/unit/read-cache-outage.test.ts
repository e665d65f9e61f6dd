// While MongoDB is unreachable the read cache answers with an entry past its TTL, as long as the
// epoch it was read under is current (core/platform/db/read-cache.ts): every change moves the
// epoch and drops the entry, so the entry is still what the database holds. Never without a known
// epoch, after the epoch moved, for an error that is not MongoDB being unreachable, or for an
// entry it never had.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ReadCache } from '../../core/platform/db/read-cache.js';

const firm = { _id: 'acme', settings: { voice_webhook_secret: 'whsec_acme' } };
/** What the driver throws when no server answers within serverSelectionTimeoutMS. */
const unreachable = () =>
  Object.assign(new Error('connect ECONNREFUSED'), { name: 'MongoServerSelectionError' });
const PAST_TTL_MS = 61_000;

let cache: ReadCache;
let loads: number;
const loadFirm = () => {
  loads += 1;
  return Promise.resolve(structuredClone(firm));
};
const failing = (err: Error) => () => {
  loads += 1;
  return Promise.reject(err);
};

beforeEach(async () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  cache = new ReadCache();
  cache.observeEpoch('7');
  loads = 0;
  await cache.read('firms', 'acme', loadFirm);
  vi.setSystemTime(Date.now() + PAST_TTL_MS);
});
afterEach(() => vi.useRealTimers());

describe('the read cache while MongoDB is unreachable', () => {
  it('answers an entry past its TTL when its epoch is current (a copy, or the shared document)', async () => {
    const copy = await cache.read('firms', 'acme', failing(unreachable()));
    expect(copy).toEqual(firm);
    expect(loads).toBe(2); // the database was asked first
    const shared = await cache.read('firms', 'acme', failing(unreachable()), { shared: true });
    expect(shared).toEqual(firm);
    expect(Object.isFrozen(shared)).toBe(true);
  });

  it('a reachable database answers as before: a fresh read replaces the entry', async () => {
    const changed = { ...firm, settings: { voice_webhook_secret: 'whsec_new' } };
    expect(await cache.read('firms', 'acme', () => Promise.resolve(changed))).toEqual(changed);
  });

  it('throws once the epoch moved or is unknown, or for another error, or for an entry it never had', async () => {
    await expect(cache.read('firms', 'acme', failing(new Error('bad query')))).rejects.toThrow('bad query');
    await expect(cache.read('firms', 'other', failing(unreachable()))).rejects.toThrow('ECONNREFUSED');

    cache.observeEpoch('8'); // a change somewhere: every entry goes
    await expect(cache.read('firms', 'acme', failing(unreachable()))).rejects.toThrow('ECONNREFUSED');

    await cache.read('firms', 'acme', loadFirm);
    vi.setSystemTime(Date.now() + PAST_TTL_MS);
    cache.clear(); // Redis down: the epoch cannot be read
    await expect(cache.read('firms', 'acme', failing(unreachable()))).rejects.toThrow('ECONNREFUSED');
  });

  it('throws when the epoch moves while the database is being asked', async () => {
    const movesThenFails = () => {
      cache.observeEpoch('8');
      return Promise.reject(unreachable());
    };
    await expect(cache.read('firms', 'acme', movesThenFails)).rejects.toThrow('ECONNREFUSED');
  });
});
