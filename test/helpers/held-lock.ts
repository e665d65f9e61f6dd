import type { RedisClient } from '../../core/platform/redis.js';
import { withRecordLock } from '../../core/platform/redis-mutex.js';

// A record lock held by the test (withRecordLock, the service's own), so that a test can show a
// writer waits for it: started while the lock is held, the writer has not landed after a while
// far longer than it takes unheld, and lands once the lock is let go.

export interface HeldLock {
  /** Lets the lock go, and resolves once it is released. */
  release(): Promise<void>;
}

/** Takes `key` and holds it until `release()`. */
export async function holdLock(redis: RedisClient, key: string): Promise<HeldLock> {
  let letGo!: () => void;
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  const holder = withRecordLock(redis, key, async () => {
    holding();
    await new Promise<void>((resolve) => (letGo = resolve));
  });
  await held;
  return {
    async release() {
      letGo();
      await holder;
    },
  };
}

/** 'landed' when every one of `writes` settles within `ms`, else 'waiting'. */
export function landsWithin(writes: Array<Promise<unknown>>, ms: number): Promise<'landed' | 'waiting'> {
  return Promise.race([
    Promise.allSettled(writes).then(() => 'landed' as const),
    new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), ms)),
  ]);
}
