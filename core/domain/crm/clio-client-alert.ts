import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import type { Services } from '../../wiring/services.js';
import { replaceById } from '../../platform/db/upsert.js';

// Clio refusing the service's own OAuth client (CLIO_CLIENT_ID / CLIO_CLIENT_SECRET), RFC 6749
// §5.2: `invalid_client` (the credentials are wrong, revoked or rotated at Clio) or another
// refusal that is not about a firm's grant. No firm can fix it and every firm is affected, so no
// firm is asked to reconnect: the operator is told (an error log line each time, the
// clio_oauth_client_refused gauge in /metrics, a `clio_oauth` detail in /readyz) and the firms
// stay connected; the next grant Clio accepts clears it. Only `invalid_grant` is a firm's
// (clio-connection.ts). One key document, read by the web process, written by whichever process
// asked Clio.

export interface ClioClientAlertDoc {
  _id: 'clio_client';
  /** Clio's `error` (invalid_client, unauthorized_client, ...). */
  error: string;
  description: string | null;
  /** The first refusal since the last accepted grant. */
  since: Date;
  last_at: Date;
}

const alerts = (db: Db) => collection<ClioClientAlertDoc>(db, COLLECTIONS.clioClientAlerts);

/** Records the refusal and logs it at error level, naming the firm whose request met it. */
export async function raiseClioClientAlert(
  services: Services,
  refusal: { error: string; description: string | null; firm: string },
): Promise<void> {
  const now = new Date();
  services.log.error(
    { firm: refusal.firm, clio_error: refusal.error, clio_error_description: refusal.description },
    `Clio refused the service's own OAuth client credentials (${refusal.error}): check CLIO_CLIENT_ID and CLIO_CLIENT_SECRET; firms stay connected`,
  );
  const held = await alerts(services.mongo.db).findOne({ _id: 'clio_client' });
  await replaceById(alerts(services.mongo.db), 'clio_client', {
    error: refusal.error,
    description: refusal.description,
    since: held?.since ?? now,
    last_at: now,
  });
}

/** Clio accepted a grant: the client credentials work again. */
export async function clearClioClientAlert(db: Db): Promise<void> {
  await alerts(db).deleteOne({ _id: 'clio_client' });
}

export async function clioClientAlert(db: Db): Promise<ClioClientAlertDoc | null> {
  return alerts(db).findOne({ _id: 'clio_client' });
}

/** The /readyz detail: "ok", or what Clio refused and since when. */
export function clioClientAlertText(alert: ClioClientAlertDoc | null): string {
  if (alert === null) return 'ok';
  return (
    `Clio refuses the service's client credentials (${alert.error}) since ${alert.since.toISOString()}` +
    `${alert.description === null ? '' : `: ${alert.description.slice(0, 200)}`}`
  );
}
