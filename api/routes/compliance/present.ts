import type { ApiPrincipal } from '../../../core/domain/access/principal.js';
export { dncEntryView } from '../../../core/domain/compliance/dnc-view.js';

/** Who acted, as a DNC record keeps it: `platform`, `api_key:<id>`, `session:<subject>`. */
export function principalName(principal: ApiPrincipal): string {
  if (principal.kind === 'platform')
    return principal.via === 'platform_key' ? 'platform' : `session:${principal.subject}`;
  return `${principal.via}:${principal.subject}`;
}
