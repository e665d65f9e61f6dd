import type { Db } from 'mongodb';
import { forbidden, notFound, quote } from '../../platform/errors.js';
import type { Principal } from './principal.js';
import { getFirm, type FirmDoc } from '../firms/firms.js';

/** Firm isolation: a firm (or widget) token may only name its own firm; the firm must exist. */
export async function requireFirm(db: Db, principal: Principal, slug: string): Promise<FirmDoc> {
  assertMayActOn(principal, slug);
  const firm = await getFirm(db, slug);
  if (firm === null) throw notFound('firm', `No firm has the slug ${quote(slug)}.`);
  return firm;
}

function assertMayActOn(principal: Principal, slug: string): void {
  if (principal.kind !== 'platform' && principal.firm !== slug) throw forbidden();
}

export function requirePlatform(principal: Principal): void {
  if (principal.kind !== 'platform') throw forbidden('Only the platform key may do this.');
}

/** For records addressed by id: another firm's record is reported as not found. */
export function mayRead(principal: Principal, firm: string): boolean {
  return principal.kind === 'platform' || principal.firm === firm;
}
