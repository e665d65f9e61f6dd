// The rate limiter's windows while Redis cannot be reached (api/middleware/rate-limit.ts): the
// same sliding windows as rate-limit-hit.lua, kept in this process's memory, so that the limits
// hold through a Redis outage too (each web process counts on its own: with N processes a
// client may get up to N times a limit while Redis is down). At most `maxWindows` are kept, the
// least recently used dropped first, so memory stays bounded whatever the number of clients.

/** A window: requests let in by bucket number (`window_ms / buckets` long each). */
type Counts = Map<number, number>;

export class MemoryWindows {
  private readonly windows = new Map<string, Counts>();

  constructor(readonly maxWindows = 20_000) {}

  /** How many windows are kept now (for tests). */
  get size(): number {
    return this.windows.size;
  }

  /** One request, as the Lua script counts it: let in, or refused with the ms to wait. */
  hit(
    key: string,
    now: number,
    windowMs: number,
    buckets: number,
    limit: number,
    count: boolean,
  ): { allowed: boolean; waitMs: number } {
    const size = windowMs / buckets;
    const current = Math.floor(now / size);
    const oldest = current - buckets;
    const counts = this.windows.get(key) ?? new Map<number, number>();
    this.windows.delete(key); // re-inserted below: the most recently used is last
    let total = 0;
    for (const [bucket, n] of counts) {
      if (bucket < oldest) counts.delete(bucket);
      else total += n;
    }
    if (total < limit) {
      if (count) counts.set(current, (counts.get(current) ?? 0) + 1);
      this.keep(key, counts);
      return { allowed: true, waitMs: 0 };
    }
    this.keep(key, counts);
    let left = total;
    const newest = Math.max(current, ...counts.keys());
    for (let bucket = oldest; bucket <= newest; bucket++) {
      left -= counts.get(bucket) ?? 0;
      if (left < limit) return { allowed: false, waitMs: (bucket + buckets + 1) * size - now };
    }
    return { allowed: false, waitMs: windowMs };
  }

  private keep(key: string, counts: Counts): void {
    if (counts.size === 0) return;
    this.windows.set(key, counts);
    while (this.windows.size > this.maxWindows) this.windows.delete(this.windows.keys().next().value!);
  }
}
