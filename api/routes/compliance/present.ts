import type { ApiPrincipal } from '../../../core/domain/access/principal.js';
import type { DncEntry } from '../../../core/domain/compliance/dnc-store.js';

export function dncEntryView(entry: DncEntry) {
  return {
    phone: entry.phone,
    firm: entry.firm,
    source: entry.source,
    reason: entry.reason,
    evidence: entry.evidence ?? null,
    added_at: entry.added_at.toISOString(),
    added_by: entry.added_by,
  };
}

/** Who acted, as a DNC record keeps it: `platform`, `api_key:<id>`, `session:<subject>`. */
export function principalName(principal: ApiPrincipal): string {
  if (principal.kind === 'platform')
    return principal.via === 'platform_key' ? 'platform' : `session:${principal.subject}`;
  return `${principal.via}:${principal.subject}`;
}
