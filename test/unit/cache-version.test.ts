// The version per-process caches are kept under (core/platform/cache-version.ts): random, and a
// decimal integer Redis's INCR accepts (a signed 64-bit one), so an earlier release's bump works.
import { describe, expect, it } from 'vitest';
import { freshCacheVersion } from '../../core/platform/cache-version.js';

describe('freshCacheVersion', () => {
  it('is a positive decimal integer below 2^62, different each time', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const v = freshCacheVersion();
      expect(v).toMatch(/^[1-9][0-9]*$/);
      expect(BigInt(v) < 2n ** 62n).toBe(true);
      seen.add(v);
    }
    expect(seen.size).toBe(1000);
  });
});
