import type { Context } from 'koa';
import { assertValidIdempotencyKey } from '../core/platform/db/idempotency.js';

/** The request's Idempotency-Key (400 when it is not one); undefined when none is sent. */
export function idempotencyKeyOf(koa: Context): string | undefined {
  const header = koa.get('Idempotency-Key');
  if (header === '') return undefined;
  assertValidIdempotencyKey(header);
  return header;
}
