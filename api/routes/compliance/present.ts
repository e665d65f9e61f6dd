import type { ApiPrincipal } from '../../../core/domain/access/principal.js';
import { dncEntryData, type DncEntry } from '../../../core/domain/compliance/dnc-store.js';

export const dncEntryView = (entry: DncEntry) => dncEntryData(entry);

/** Who acted, as a DNC record keeps it: `platform`, `api_key:<id>`, `session:<subject>`. */
export function principalName(principal: ApiPrincipal): string {
  if (principal.kind === 'platform')
    return principal.via === 'platform_key' ? 'platform' : `session:${principal.subject}`;
  return `${principal.via}:${principal.subject}`;
}
