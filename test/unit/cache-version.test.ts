// The version per-process caches are kept under (core/platform/cache-version.ts): random, and a
// decimal integer Redis's INCR accepts (a signed 64-bit one), so an earlier release's bump works;
// a copy is used under its version for a minute at most.
import { afterEach, describe, expect, it } from 'vitest';
import {
  CACHE_COPY_MAX_AGE_MS,
  copyIsCurrent,
  copyStamp,
  freshCacheVersion,
} from '../../core/platform/cache-version.js';
import { clock } from '../../core/platform/clock.js';

afterEach(() => clock.reset());

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

describe('copyIsCurrent', () => {
  it('holds under the same version until the copy is a minute old', () => {
    const version = freshCacheVersion();
    const stamp = copyStamp(version);
    expect(copyIsCurrent(stamp, version)).toBe(true);
    expect(copyIsCurrent(stamp, freshCacheVersion())).toBe(false);
    expect(copyIsCurrent(stamp, null)).toBe(false);
    expect(copyIsCurrent(undefined, version)).toBe(false);
    expect(copyIsCurrent(copyStamp(null), null)).toBe(true);
    clock.shift(CACHE_COPY_MAX_AGE_MS - 1000);
    expect(copyIsCurrent(stamp, version)).toBe(true);
    clock.shift(1000);
    expect(copyIsCurrent(stamp, version)).toBe(false);
  });
});
