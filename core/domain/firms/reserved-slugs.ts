import { invalidRequest, quote } from '../../platform/errors.js';

/**
 * The names of the operations under /api/v2/, which no firm may take as its slug: a firm's own
 * paths are /api/v2/{firm}/…, and the router answers the first route a path matches, so a firm
 * called `get-call` would find its `GET /api/v2/get-call/reminders` answered by get-call.
 * test/unit/reserved-slugs.test.ts keeps this list equal to the route table's.
 */
export const RESERVED_SLUGS: ReadonlySet<string> = new Set([
  'chat-completion',
  'create-agent',
  'create-chat',
  'create-outbound-call',
  'delete-agent',
  'end-chat',
  'get-agent',
  'get-call',
  'get-chat',
  'list-agents',
  'list-calls',
  'list-voices',
  'update-agent',
]);

/** 400 when `slug` is the name of an operation under /api/v2/. */
export function refuseReservedSlug(slug: string): void {
  if (!RESERVED_SLUGS.has(slug)) return;
  throw invalidRequest(
    `The slug ${quote(slug)} is the name of an operation under /api/v2/; choose another.`,
    [{ path: '/slug', message: 'is reserved' }],
  );
}
