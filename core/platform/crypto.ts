import { createHmac, hash, timingSafeEqual } from 'node:crypto';

// Digests of short strings (a token, a rate limit's identity) are taken on every request: the
// one-shot `hash` makes no Hash object, about half the cost of `createHash` for these sizes.

export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/** Constant-time equality of two strings of any length (compares their digests). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** The SHA-256 digest of a string. */
export const sha256 = (value: string): Buffer => hash('sha256', value, 'buffer');

/**
 * Constant-time comparison of presented secrets against one known secret (the platform key),
 * whose digest is computed once, not on every request: `matches` takes the presented value's
 * digest, which the caller can use again (an API key's lookup is by its SHA-256).
 */
export function secretDigest(secret: string): { matches(presentedDigest: Buffer): boolean } {
  const digest = sha256(secret);
  return { matches: (presented) => timingSafeEqual(presented, digest) };
}

export function hmacHex(secret: string, data: string | Buffer): string {
  return createHmac('sha256', secret).update(data).digest('hex');
}
