import { ClioClient } from '../../integrations/crm/clio.js';
import { clioRegionBase, type ClioRegion } from '../../integrations/crm/clio-oauth.js';
import { urlPolicyOf } from '../../platform/config.js';
import type { Services } from '../../wiring/services.js';
import type { FirmDoc } from '../firms/firms.js';
import { clioConnectionBase, clioTokenSource } from './clio-connection.js';

/**
 * The Clio client of a firm whose settings.crm is Clio, or null when it is not: connected with
 * OAuth (docs/clio.md#refresh), the connection's tokens, refreshed as needed; else the pasted token.
 */
export async function firmClioClient(services: Services, firm: FirmDoc): Promise<ClioClient | null> {
  const crm = firm.settings.crm;
  if (crm.provider !== 'clio') return null;
  const policy = urlPolicyOf(services.config);
  if ('oauth' in crm) {
    return new ClioClient({
      baseUrl: await clioConnectionBase(services, firm._id),
      accessToken: clioTokenSource(services, firm._id),
      policy,
    });
  }
  return new ClioClient({
    baseUrl: pastedTokenBase(services.config.clioBaseUrl, crm),
    accessToken: crm.access_token,
    policy,
  });
}

/**
 * Where a pasted token is used: its `base_url`, else its region's host (`us` by default; a
 * CLIO_BASE_URL other than Clio's own, as in tests, replaces every region).
 */
export function pastedTokenBase(
  clioBaseUrl: string,
  crm: { base_url?: string; region?: ClioRegion },
): string {
  return crm.base_url ?? clioRegionBase(clioBaseUrl, crm.region ?? 'us');
}

/** Whether the firm can be read from Clio now: Clio set up, and an OAuth grant not refused. */
export function clioConnected(firm: FirmDoc): boolean {
  const crm = firm.settings.crm;
  if (crm.provider !== 'clio') return false;
  return !('oauth' in crm) || crm.oauth.status !== 'reconnect_required';
}
