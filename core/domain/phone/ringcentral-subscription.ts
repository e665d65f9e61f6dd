import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';
import {
  firmRingCentralClient,
  phoneWebhookUrl,
  readRingCentralConnection,
  updateRingCentralConnection,
} from './ringcentral-connection.js';

// A firm's RingCentral webhook subscription for its missed calls (docs/ringcentral.md#missed-call-callbacks):
// made when the firm connects, with the event filter of the connected extension's telephony
// sessions (RingCentral's Telephony Sessions event: each party's status, `missedCall` on a call
// nobody answered), delivered to PUBLIC_BASE_URL/api/v2/<firm>/phone-webhook with the
// connection's verification token. RingCentral checks the address first (the Validation-Token
// handshake). A subscription lives `expiresIn` seconds; the maintenance job
// (maintain-ringcentral-subscriptions, every RINGCENTRAL_SUBSCRIPTION_CHECK_MS) asks RingCentral
// for each firm's: gone (RingCentral dropped it, or it lapsed) → made again; lapsing before the
// check after next → renewed. The schedule lives in Redis, so a worker restart does not lose it.

export const TELEPHONY_SESSIONS_FILTER = '/restapi/v1.0/account/~/extension/~/telephony/sessions';
/** What we ask for: RingCentral's longest webhook lifetime is far longer; a week keeps renewals rare. */
export const SUBSCRIPTION_SECONDS = 7 * 86_400;

const connectionsOf = (db: Db) =>
  collection<{ _id: string; status: string }>(db, COLLECTIONS.ringcentralConnections);

export type SubscriptionAction = 'created' | 'renewed' | 'kept' | 'failed';

/**
 * Makes sure the firm's subscription exists and outlives the next checks: asks RingCentral for the
 * one the connection names; re-creates it when gone; renews it when less than `renewWithinMs`
 * (two check intervals) or a fifth of its lifetime is left, whichever is more — a late check (a
 * busy worker, a restart) still finds it alive.
 */
export async function ensureRingCentralSubscription(
  services: Services,
  firm: string,
  renewWithinMs = 2 * services.config.ringcentralSubscriptionCheckMs,
): Promise<SubscriptionAction> {
  // One check at a time per firm, the connection read inside: the connect callback and the
  // maintenance job meeting a firm without a subscription make one, not two.
  return withRecordLock(
    services.redis,
    redisKeys(services.config).ringcentralSubscriptionLock(firm),
    () => ensureNow(services, firm, renewWithinMs),
    { waitMs: 60_000, ttlMs: 60_000 },
  );
}

async function ensureNow(
  services: Services,
  firm: string,
  renewWithinMs: number,
): Promise<SubscriptionAction> {
  const conn = await readRingCentralConnection(services.mongo.db, firm);
  if (conn === null || conn.status !== 'connected') return 'failed';
  const client = await firmRingCentralClient(services, firm);
  let info = conn.subscription === null ? null : await client.getSubscription(conn.subscription.id);
  let action: SubscriptionAction = 'kept';
  if (info !== null && info.status === 'Active') {
    const expires = Date.parse(info.expirationTime ?? '');
    const lifetime = conn.subscription?.lifetime_ms ?? 0;
    if (!Number.isFinite(expires) || expires - Date.now() <= Math.max(renewWithinMs, lifetime * 0.8)) {
      info = await client.renewSubscription(info.id!);
      action = 'renewed';
    }
  } else {
    info = null;
  }
  if (info === null) {
    info = await client.createSubscription({
      eventFilters: [TELEPHONY_SESSIONS_FILTER],
      expiresIn: SUBSCRIPTION_SECONDS,
      deliveryMode: {
        transportType: 'WebHook',
        address: phoneWebhookUrl(services, firm),
        verificationToken: conn.verification_token,
      },
    });
    action = 'created';
  }
  const expiresAt = new Date(info.expirationTime ?? Date.now());
  // Its lifetime as RingCentral granted it (a renewal starts it again).
  const subscription =
    action === 'kept' && conn.subscription !== null
      ? { ...conn.subscription, expires_at: expiresAt }
      : { id: info.id!, expires_at: expiresAt, lifetime_ms: Math.max(0, expiresAt.getTime() - Date.now()) };
  await updateRingCentralConnection(services, firm, (c) => ({ ...c, subscription }));
  if (action !== 'kept')
    services.log.info({ firm, subscription: subscription.id, action }, 'RingCentral subscription');
  return action;
}

/**
 * The maintenance job: every connected firm's subscription checked, one streaming cursor over
 * the connections. A firm whose check fails is logged and tried again at the next run.
 */
export async function maintainRingCentralSubscriptions(
  services: Services,
): Promise<Record<SubscriptionAction, number>> {
  const counts: Record<SubscriptionAction, number> = { created: 0, renewed: 0, kept: 0, failed: 0 };
  const cursor = connectionsOf(services.mongo.db).find({}, { projection: { _id: 1, status: 1 } });
  for await (const conn of cursor) {
    if (conn.status !== 'connected') continue;
    try {
      counts[await ensureRingCentralSubscription(services, conn._id)] += 1;
    } catch (err) {
      counts.failed += 1;
      services.log.warn(
        { err, firm: conn._id },
        'RingCentral subscription check failed; retried at the next run',
      );
    }
  }
  return counts;
}
