import type { RedisClient } from '../../platform/redis.js';
import { withRecordLock } from '../../platform/redis-mutex.js';

// The access token of a firm's OAuth connection (Clio's, RingCentral's), refreshed shortly before
// it expires and once after a 401, under a per-firm Redis lock: whoever takes the lock reads the
// connection again and refreshes only if that is still needed, so however many workers need a
// token at once, one refresh happens and the others use its result (docs/clio.md#refresh,
// docs/ringcentral.md#connection). What a refresh is, and what a refused one means, is the
// provider's (`refresh`). The lock is renewed while its holder works: a refresh may outlast its
// TTL (the token request alone may take 20 s after its DNS lookup, a refused one is followed by
// the firm's notice and its mail), and a second worker taking a lapsed lock would send the same
// refresh token again, which the provider, having rotated it, refuses as invalid_grant.

export interface OAuthTokenSource {
  /** A token to use now (refreshed first when it is about to expire). */
  current(): Promise<string>;
  /** The provider answered 401 to `stale`: a token refreshed since (by this caller or another). */
  renew(stale: string): Promise<string>;
}

export interface RefreshableConnection {
  access_token: string;
  expires_at: Date;
}

export function lockedTokenSource<C extends RefreshableConnection>(options: {
  redis: RedisClient;
  lockKey: string;
  /** The lock's TTL (OAUTH_TOKEN_LOCK_MS), renewed every third of it while held. */
  lockTtlMs: number;
  /** Refresh this long before the token expires. */
  marginMs: number;
  /** The connection as stored (throws when there is none, or it may not be used). */
  read: () => Promise<C>;
  /** Refreshes the connection's tokens and stores them; the new access token. */
  refresh: (conn: C) => Promise<string>;
}): OAuthTokenSource {
  const due = (conn: C) => conn.expires_at.getTime() - Date.now() <= options.marginMs;
  /** Under the lock: the connection read again; refreshed only if still needed. */
  const refresh = (needed: (conn: C) => boolean) =>
    withRecordLock(
      options.redis,
      options.lockKey,
      async () => {
        const conn = await options.read();
        if (!needed(conn)) return conn.access_token;
        return options.refresh(conn);
      },
      { ttlMs: options.lockTtlMs, renew: true, waitMs: 60_000 },
    );
  return {
    async current() {
      const conn = await options.read();
      return due(conn) ? refresh(due) : conn.access_token;
    },
    renew: (stale) => refresh((conn) => conn.access_token === stale || due(conn)),
  };
}
