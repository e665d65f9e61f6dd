// The read cache keeps a document only when no change epoch was observed while it was read
// (core/platform/db/read-cache.ts): epochs observed out of order — a reply or a job's GET that
// arrives after a newer one — cost a clear, never a stale entry.
import { describe, expect, it } from 'vitest';
import { ReadCache } from '../../core/platform/db/read-cache.js';

/** A load the test finishes when it chooses, counting how often it was asked. */
function slowLoad(): { load: () => Promise<{ v: string }>; finish(v: string): void; calls: () => number } {
  let calls = 0;
  let finish: (v: string) => void = () => {};
  return {
    load: () => {
      calls += 1;
      return new Promise((resolve) => {
        finish = (v) => resolve({ v });
      });
    },
    finish: (v) => finish(v),
    calls: () => calls,
  };
}

describe('read cache epochs', () => {
  it('keeps what was read under one epoch, and serves it until another is observed', async () => {
    const cache = new ReadCache();
    cache.observeEpoch('5');
    let loads = 0;
    const load = () => Promise.resolve({ v: `read ${++loads}` });
    expect(await cache.read('firms', 'acme', load)).toEqual({ v: 'read 1' });
    expect(await cache.read('firms', 'acme', load)).toEqual({ v: 'read 1' });
    cache.observeEpoch('5');
    expect(await cache.read('firms', 'acme', load)).toEqual({ v: 'read 1' });
    cache.observeEpoch('6');
    expect(await cache.read('firms', 'acme', load)).toEqual({ v: 'read 2' });
  });

  it('does not keep a read during which a newer epoch and then a late older one were observed', async () => {
    const cache = new ReadCache();
    cache.observeEpoch('5');
    const slow = slowLoad();
    const first = cache.read('firms', 'acme', slow.load);
    // A job that started after a change sees 7; a job's GET sent before it answers 5 afterwards.
    cache.observeEpoch('7');
    cache.observeEpoch('5');
    slow.finish('before the change');
    expect(await first).toEqual({ v: 'before the change' });
    const second = cache.read('firms', 'acme', slow.load);
    expect(slow.calls()).toBe(2);
    slow.finish('after the change');
    expect(await second).toEqual({ v: 'after the change' });
  });

  it('keeps nothing while the epoch is unknown', async () => {
    const cache = new ReadCache();
    let loads = 0;
    const load = () => Promise.resolve({ v: `read ${++loads}` });
    cache.observeEpoch(null);
    await cache.read('firms', 'acme', load);
    await cache.read('firms', 'acme', load);
    expect(loads).toBe(2);
    cache.observeEpoch('1');
    await cache.read('firms', 'acme', load);
    cache.observeEpoch(null);
    await cache.read('firms', 'acme', load);
    expect(loads).toBe(4);
  });
});
