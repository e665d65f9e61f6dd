// A memo of recent answers for per-process caches keyed by something every call brings anew (a
// phone number, a call's sealed secret): an answer is kept while it is used, and dropped once it
// has gone unused for `maxAgeMs` (on the service clock) or when `maxEntries` is reached (oldest
// first). So the memo holds about (keys per second × maxAgeMs) entries under a steady load,
// reached within maxAgeMs, and never more than maxEntries — a bound by count alone would fill
// for as long as new keys come (4,096 phone numbers take an hour at one call a second), which a
// long run sees as a slow, steady growth of the heap.
import { clock } from './clock.js';

export class RecentMemo<K, V> {
  /** Insertion order is last-use order: the oldest entry is always first. */
  private readonly entries = new Map<K, { value: V; usedAt: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly maxAgeMs: number,
  ) {
    if (!(maxEntries >= 1) || !(maxAgeMs > 0))
      throw new Error('a RecentMemo needs maxEntries ≥ 1 and maxAgeMs > 0');
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    const now = clock.now();
    this.dropOld(now);
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    // Used again: to the back, with a fresh age.
    this.entries.delete(key);
    entry.usedAt = now;
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: K, value: V): void {
    const now = clock.now();
    this.dropOld(now);
    this.entries.delete(key);
    while (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, usedAt: now });
  }

  clear(): void {
    this.entries.clear();
  }

  private dropOld(now: number): void {
    for (const [key, entry] of this.entries) {
      // An entry from a clock since set back (tests) is dropped too.
      if (now - entry.usedAt < this.maxAgeMs && entry.usedAt <= now) return;
      this.entries.delete(key);
    }
  }
}
