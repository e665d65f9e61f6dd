import type { Db } from 'mongodb';
import { forbidden, invalidRequest, notFound, quote } from '../../platform/errors.js';
import type { ApiPrincipal, Principal } from './principal.js';
import type { Frozen } from '../../platform/db/read-cache.js';
import { getFirm, peekFirm, type FirmDoc } from '../firms/firms.js';

// Authorization: the routes ask here, once, whether the caller may act, then hand the domain an
// already-checked firm or record. The domain never sees a Principal.

/** Firm isolation: a firm (or widget) token may only name its own firm (403); the firm must exist (404). */
export const requireFirm = (db: Db, principal: Principal, slug: string): Promise<FirmDoc> =>
  authorizedFirm(principal, slug, () => getFirm(db, slug));

/**
 * As `requireFirm`, for a route that only reads the firm (create-outbound-call, on every call):
 * the read cache's own document, frozen, not a copy.
 */
export const requireFirmToRead = (db: Db, principal: Principal, slug: string): Promise<Frozen<FirmDoc>> =>
  authorizedFirm(principal, slug, () => peekFirm(db, slug));

async function authorizedFirm<T>(
  principal: Principal,
  slug: string,
  read: () => Promise<T | null>,
): Promise<T> {
  if (!mayActOn(principal, slug)) throw forbidden();
  const firm = await read();
  if (firm === null) throw firmNotFound(slug);
  return firm;
}

/** 404 firm_not_found for a slug no firm has. */
export const firmNotFound = (slug: string) => notFound('firm', `No firm has the slug ${quote(slug)}.`);

/**
 * The firm a list is for, where firmSlug may be left out: a firm token's own firm; the platform
 * key acts on every firm, so it must name one (400, with details naming /firmSlug).
 */
export async function requireListFirm(
  db: Db,
  principal: ApiPrincipal,
  slug: string | undefined,
): Promise<FirmDoc> {
  const named = slug ?? (principal.kind === 'firm' ? principal.firm : undefined);
  if (named === undefined) {
    throw invalidRequest('Name the firm with firmSlug (the platform key acts on every firm).', [
      { path: '/firmSlug', message: 'is required with the platform key' },
    ]);
  }
  return requireFirm(db, principal, named);
}

/**
 * A record addressed by id, if the principal may see it: a missing record and another firm's
 * both answer 404, so an id of another firm is never confirmed to exist. A widget token sees
 * only the records it opened itself (its chats).
 */
export function requireRecord<T extends { firm: string; widget_subject?: string }>(
  principal: Principal,
  record: T | null,
  thing: string,
  message?: string,
): T {
  if (record === null || !mayActOn(principal, record.firm)) throw notFound(thing, message);
  if (principal.kind === 'widget' && record.widget_subject !== principal.subject)
    throw notFound(thing, message);
  return record;
}

/** Routes (and fields) for the platform only: 403 for any other token. */
export function requirePlatform(principal: Principal, message = 'Only the platform key may do this.'): void {
  if (principal.kind !== 'platform') throw forbidden(message);
}

/** The platform key itself (not a platform session): 403 for any other token. */
export function requirePlatformKey(
  principal: Principal,
  message = 'Only the platform key may do this.',
): void {
  if (principal.kind !== 'platform' || principal.via !== 'platform_key') throw forbidden(message);
}

export function mayActOn(principal: Principal, firm: string): boolean {
  return principal.kind === 'platform' || principal.firm === firm;
}
