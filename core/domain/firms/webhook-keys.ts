import { isMongoUnavailable } from '../../platform/errors.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';
import { keyringOf } from '../../platform/secrets/data-keys.js';
import { isSealed, open, seal, type Sealed } from '../../platform/secrets/envelope.js';
import type { Services } from '../../wiring/services.js';
import { everyFirm, peekFirm, type FirmDoc } from './firms.js';
import type { Frozen } from '../../platform/db/read-cache.js';
import { RecentMemo } from '../../platform/recent-memo.js';

// The keys a firm's webhook deliveries are signed with, as webhook authentication reads them
// (api/webhook-auth.ts): from the firm (the read cache, MongoDB), or, while MongoDB cannot be
// reached, from a copy in Redis, so that a correctly signed delivery is still taken into its queue
// with a 200; only with both stores down is the answer 503 (docs/webhooks.md#mongodb-outages).
//
// The copy is a HASH per firm: the keys sealed with the master key (SECRETS_KEY; the additional
// data names the firm and the field, so a copy moved to another firm's key does not open), and the
// firm's `updated_at` they are from. A change of the firm removes the copy before its write and
// writes the new one after it (the old one again when the change is refused); a reader writes the
// copy it read once per version and process, and a copy from an earlier version never replaces a
// later one. So a key replaced by a PATCH is never taken from the copy
// once the PATCH has answered. An hourly maintenance job writes every firm's copy (firms from
// before this version, a Redis that lost its data).

/** A firm's webhook keys: what a sender's signature is checked with. */
export interface WebhookKeys {
  firm: string;
  voice_webhook_secret?: string;
  booking_webhook_secret?: string;
}

type KeyField = 'voice_webhook_secret' | 'booking_webhook_secret';
const FIELDS: readonly KeyField[] = ['voice_webhook_secret', 'booking_webhook_secret'];

/** What the copy's `value` holds: the master key's id, and each key the firm has, sealed. */
interface SealedCopy {
  kid: string;
  keys: Partial<Record<KeyField, Sealed>>;
}

const PUBLISH = loadRedisScript(new URL('./publish-webhook-keys.lua', import.meta.url), {
  keys: ['copy'],
  args: ['value', 'version'],
});

const aad = (firm: string, field: KeyField) => `intake-service/webhook-keys/v1|${firm}|${field}`;
const copyKey = (services: Services, firm: string) => redisKeys(services.config).firmWebhookKeys(firm);

function webhookKeysOf(firm: FirmDoc | Frozen<FirmDoc>): WebhookKeys {
  const keys: WebhookKeys = { firm: firm._id };
  for (const field of FIELDS) {
    const value = firm.settings[field];
    if (value !== undefined) keys[field] = value;
  }
  return keys;
}

/** Writes the firm's copy, unless the one held is from a later version of the firm. */
export async function publishWebhookKeys(services: Services, firm: FirmDoc | Frozen<FirmDoc>): Promise<void> {
  const keyring = keyringOf(services.mongo.db);
  const keys = webhookKeysOf(firm);
  const copy: SealedCopy = { kid: keyring.current.id, keys: {} };
  for (const field of FIELDS) {
    const value = keys[field];
    if (value !== undefined) copy.keys[field] = seal(keyring.current.key, value, aad(firm._id, field));
  }
  await PUBLISH.run(
    services.redis,
    { copy: copyKey(services, firm._id) },
    { value: JSON.stringify(copy), version: firm.updated_at.getTime() },
  );
}

/** Removes the firm's copy: before a change of the firm is written. */
export async function withdrawWebhookKeys(services: Services, firm: string): Promise<void> {
  await services.redis.del(copyKey(services, firm));
}

/** The firm's keys from its copy; null when there is none (or it does not open with our keys). */
export async function copiedWebhookKeys(services: Services, firm: string): Promise<WebhookKeys | null> {
  const value = await services.redis.hget(copyKey(services, firm), 'value');
  if (value === null) return null;
  try {
    const copy = JSON.parse(value) as SealedCopy;
    const master = keyringOf(services.mongo.db).all.get(copy.kid);
    if (master === undefined) return null;
    const keys: WebhookKeys = { firm };
    for (const field of FIELDS) {
      const sealed = copy.keys[field];
      if (isSealed(sealed)) keys[field] = open(master.key, sealed, aad(firm, field)).toString('utf8');
    }
    return keys;
  } catch {
    return null;
  }
}

/**
 * Per process: the version of each firm whose copy a read has written, kept while the firm's
 * deliveries keep coming (RecentMemo): a read writes the copy once per version, and the hourly job
 * fills a Redis that lost its data.
 */
const published = new RecentMemo<string, number>(10_000, 10 * 60_000);

function publishOnce(services: Services, firm: Frozen<FirmDoc>): void {
  // While Redis is down the delivery goes to the outbox; the copy is written on a later read.
  if (services.redis.status !== 'ready') return;
  const version = firm.updated_at.getTime();
  if (published.get(firm._id) === version) return;
  published.set(firm._id, version);
  // A failure is left to the hourly job (one warning, not one per delivery).
  publishWebhookKeys(services, firm).catch((err: unknown) => {
    services.log.warn({ err, firm: firm._id }, 'the webhook keys copy could not be written');
  });
}

/**
 * The firm's webhook keys for authenticating a delivery: from the firm; while MongoDB cannot be
 * reached, from its Redis copy. Null when there is no such firm; throws the MongoDB error when
 * MongoDB is down and there is no copy, Redis's when it is down too (both 503).
 */
export async function firmWebhookKeys(services: Services, slug: string): Promise<WebhookKeys | null> {
  try {
    const firm = await peekFirm(services.mongo.db, slug);
    if (firm === null) return null;
    publishOnce(services, firm);
    return webhookKeysOf(firm);
  } catch (err) {
    if (!isMongoUnavailable(err)) throw err;
    // Redis down too: its error (503); no copy: MongoDB's.
    const copy = await copiedWebhookKeys(services, slug);
    if (copy === null) throw err;
    return copy;
  }
}

/** Writes every firm's copy (the hourly `copy-webhook-keys` job): from one cursor. Returns how many. */
export async function publishEveryFirmsWebhookKeys(services: Services): Promise<number> {
  let count = 0;
  for await (const firm of everyFirm(services.mongo.db)) {
    await publishWebhookKeys(services, firm);
    count += 1;
  }
  return count;
}
