// A shared read (core/platform/db/read-cache.ts `shared`, `cachedReadShared`, the firm's
// `peekFirm`) hands out the cached document itself, not a copy: so the cache keeps its documents
// frozen, and a caller that writes to one fails at once instead of changing what every other
// request reads. Copying reads still get copies of their own.
import { describe, expect, it } from 'vitest';
import { Binary } from 'mongodb';
import { ReadCache } from '../../core/platform/db/read-cache.js';

const firm = () => ({
  _id: 'acme',
  created_at: new Date('2026-01-02T03:04:05Z'),
  settings: {
    voice_webhook_secret: 'whsec_acme',
    notification_emails: ['a@acme.test'],
    calling_window: { start: '09:00', end: '20:00', days: [1, 2, 3] },
  },
  sealed: new Binary(Buffer.from('secret')),
});
type Firm = ReturnType<typeof firm>;
/** What every read from the cache gives: the copy structuredClone makes (a BSON value as its fields). */
const cached = () => structuredClone(firm());

/** A cache with an epoch observed (nothing is kept without one) and `acme` read into it once. */
async function warmCache(): Promise<{
  cache: ReadCache;
  loads: () => number;
  read: (shared: boolean) => Promise<Firm>;
}> {
  const cache = new ReadCache();
  cache.observeEpoch('1');
  let loads = 0;
  const load = () => {
    loads += 1;
    return Promise.resolve(firm());
  };
  const read = async (shared: boolean) => (await cache.read('firms', 'acme', load, { shared }))!;
  await read(false);
  return { cache, loads: () => loads, read };
}

describe('shared reads from the read cache', () => {
  it('hand out the one cached document, frozen all the way down, with no load and no copy', async () => {
    const { read, loads } = await warmCache();
    const a = await read(true);
    const b = await read(true);
    expect(a).toBe(b);
    expect(loads()).toBe(1);
    expect(a).toEqual(cached());
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(a.settings)).toBe(true);
    expect(Object.isFrozen(a.settings.notification_emails)).toBe(true);
    expect(Object.isFrozen(a.settings.calling_window.days)).toBe(true);
  });

  it('refuse a write anywhere in the document: the cache is left as it was', async () => {
    const { read } = await warmCache();
    const shared = await read(true);
    expect(() => {
      shared.settings.voice_webhook_secret = 'stolen';
    }).toThrow(TypeError);
    expect(() => shared.settings.notification_emails.push('evil@example.com')).toThrow(TypeError);
    expect(() => {
      shared.settings.calling_window.days[0] = 7;
    }).toThrow(TypeError);
    expect(await read(true)).toEqual(cached());
    expect(await read(false)).toEqual(cached());
  });

  it('leave what cannot be frozen (the bytes inside a BSON value) as it is, and still cache the document', async () => {
    const { read, loads } = await warmCache();
    const shared = await read(true);
    const bytes = (shared.sealed as unknown as { buffer: Uint8Array }).buffer;
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(Object.isFrozen(bytes)).toBe(false);
    expect(Buffer.from(bytes).toString()).toBe('secret');
    expect(Object.isFrozen(shared.sealed)).toBe(true);
    expect(loads()).toBe(1);
  });

  it('do not reach copying reads: those are their own, writable, and change nothing shared', async () => {
    const { read } = await warmCache();
    const shared = await read(true);
    const copy = await read(false);
    expect(copy).not.toBe(shared);
    expect(Object.isFrozen(copy.settings)).toBe(false);
    copy.settings.voice_webhook_secret = 'changed';
    copy.settings.notification_emails.push('b@acme.test');
    expect(await read(true)).toEqual(cached());
  });

  it('on a miss return the document read, the caller own, and after a change epoch read afresh', async () => {
    const cache = new ReadCache();
    cache.observeEpoch('1');
    let loads = 0;
    const load = () => {
      loads += 1;
      return Promise.resolve({ v: loads, list: [loads] });
    };
    const first = (await cache.read('firms', 'acme', load, { shared: true }))!;
    expect(Object.isFrozen(first)).toBe(false);
    first.list.push(99); // the caller's own: the cache kept a frozen copy of what was read
    expect(await cache.read('firms', 'acme', load, { shared: true })).toEqual({ v: 1, list: [1] });
    cache.observeEpoch('2');
    expect(await cache.read('firms', 'acme', load, { shared: true })).toEqual({ v: 2, list: [2] });
  });
});
