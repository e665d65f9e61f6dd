// The rate limiter's windows while Redis is down (api/middleware/memory-windows.ts): the same
// sliding count as the Redis script, and never more windows than the bound.
import { describe, expect, it } from 'vitest';
import { MemoryWindows } from '../../api/middleware/memory-windows.js';

const MINUTE = 60_000;

describe('MemoryWindows', () => {
  it('lets in `limit` a minute, tells the wait, and lets in again once the oldest left the span', () => {
    const windows = new MemoryWindows();
    const t0 = 10 * MINUTE;
    for (let i = 0; i < 3; i++) expect(windows.hit('k', t0 + i, MINUTE, 12, 3, true).allowed).toBe(true);
    const refused = windows.hit('k', t0 + 10, MINUTE, 12, 3, true);
    expect(refused.allowed).toBe(false);
    expect(refused.waitMs).toBeGreaterThan(55_000);
    expect(refused.waitMs).toBeLessThanOrEqual(65_000);
    expect(windows.hit('k', t0 + 10 + refused.waitMs, MINUTE, 12, 3, true).allowed).toBe(true);
    expect(windows.hit('other', t0 + 10, MINUTE, 12, 3, true).allowed).toBe(true);
  });

  it('a look (count false) counts nothing', () => {
    const windows = new MemoryWindows();
    for (let i = 0; i < 10; i++) expect(windows.hit('k', MINUTE, MINUTE, 12, 1, false).allowed).toBe(true);
    expect(windows.hit('k', MINUTE, MINUTE, 12, 1, true).allowed).toBe(true);
    expect(windows.hit('k', MINUTE, MINUTE, 12, 1, true).allowed).toBe(false);
  });

  it('keeps at most maxWindows, dropping the least recently used', () => {
    const windows = new MemoryWindows(10);
    windows.hit('kept', 0, MINUTE, 12, 1, true);
    for (let i = 0; i < 100; i++) {
      windows.hit(`k${i}`, 0, MINUTE, 12, 1, true);
      windows.hit('kept', 0, MINUTE, 12, 1, true); // used again: stays
      expect(windows.size).toBeLessThanOrEqual(10);
    }
    expect(windows.hit('kept', 0, MINUTE, 12, 1, true).allowed).toBe(false);
  });
});
