import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { secretBox } from '../../platform/secrets/data-keys.js';
import { sealedFieldName } from '../../platform/secrets/sealed-fields.js';
import type { Sealed } from '../../platform/secrets/envelope.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { conflict, invalidRequest, type ErrorDetail } from '../../platform/errors.js';
import { urlNotAllowedReason } from '../../platform/url-policy.js';
import { urlPolicyOf } from '../../platform/config.js';
import { clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { EVENT_TYPES, type EventType } from './event-types.js';
import { changeListeners } from './listeners.js';
import { bumpCacheVersion, copyIsCurrent, copyStamp, type CopyStamp } from '../../platform/cache-version.js';

// A firm's webhook endpoints (docs/events.md#endpoints): where its events are delivered, which
// ones (a filter of types and wildcards), and the signing secret, sealed with the firm's data key
// like its other secrets and shown only when made (creation, rotation). After a rotation the
// previous secret signs too, for ROTATED_SECRET_VALID_MS, so receivers can switch over.

export const MAX_ENDPOINTS_PER_FIRM = 20;
export const ROTATED_SECRET_VALID_MS = 24 * 3_600_000;

export type DisabledReason = 'manual' | 'gone' | 'failing';

export interface WebhookEndpointDoc {
  _id: string;
  firm: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  /** Why it is disabled: by the firm (`manual`), a 410 answer (`gone`), failing for too long (`failing`). */
  disabled_reason: DisabledReason | null;
  disabled_at: Date | null;
  /** Since when every attempt failed (null after a success); disables the endpoint after WEBHOOK_DISABLE_AFTER_MS. */
  failing_since: Date | null;
  secret: Sealed;
  previous_secret: Sealed | null;
  previous_secret_until: Date | null;
  created_at: Date;
  updated_at: Date;
  /**
   * Since when it hears the firm's events: its creation, or its last enabling. An event recorded
   * before then is not sent to it when fanned out again (a retried step records it again).
   * Absent on endpoints stored before 2026-12-02: their `created_at`.
   */
  listening_since?: Date;
}

/**
 * How far apart two processes' clocks may be when an event's recording is set against the moment
 * a listener (an endpoint, a workflow) began listening: an event recorded up to this much earlier
 * still reaches it.
 */
export const LISTENING_CLOCK_MARGIN_MS = 2000;

/** Whether the endpoint was listening when the event was recorded. */
export function heardAt(endpoint: WebhookEndpointDoc, recordedAt: Date): boolean {
  const since = endpoint.listening_since ?? endpoint.created_at;
  return since.getTime() <= recordedAt.getTime() + LISTENING_CLOCK_MARGIN_MS;
}

export const endpointsCollection = (db: Db) =>
  collection<WebhookEndpointDoc>(db, COLLECTIONS.webhookEndpoints);

const SECRET_FIELD = sealedFieldName(COLLECTIONS.webhookEndpoints, 'secret');
const PREVIOUS_FIELD = sealedFieldName(COLLECTIONS.webhookEndpoints, 'previous_secret');

/** A new signing secret: `whsec_` + base64 of 24 random bytes (the Standard Webhooks form). */
export const newSigningSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

/** The `<prefix>.*` wildcards there are: each dotted prefix of a type (`call.*`, `contacts.*`, `contacts.import.*`). */
const WILDCARDS: ReadonlySet<string> = new Set(
  EVENT_TYPES.flatMap((type) => {
    const parts = type.split('.');
    return parts.slice(0, -1).map((_, i) => `${parts.slice(0, i + 1).join('.')}.*`);
  }),
);

/** Whether an entry of an endpoint's `events` is a type, a `<prefix>.*` wildcard or `*`. */
export const isEventFilter = (entry: string): boolean =>
  entry === '*' || WILDCARDS.has(entry) || (EVENT_TYPES as readonly string[]).includes(entry);

/** Whether an endpoint subscribed to `filters` receives events of `type`. */
export function matchesFilter(filters: readonly string[], type: EventType | string): boolean {
  return filters.some(
    (f) => f === '*' || f === type || (f.endsWith('.*') && type.startsWith(f.slice(0, -1))),
  );
}

export interface EndpointInput {
  url?: string;
  events?: string[];
  description?: string | null;
  enabled?: boolean;
}

/** 400 for a URL the policy refuses (url_not_allowed) and for unknown event types. */
function checkInput(services: Services, input: EndpointInput): void {
  if (input.url !== undefined) {
    const reason = urlNotAllowedReason(input.url, urlPolicyOf(services.config));
    if (reason !== null) {
      throw invalidRequest(
        `The service will not deliver to this URL (only https:// to a public host): /url ${reason}.`,
        [{ path: '/url', message: reason }],
        'url_not_allowed',
      );
    }
  }
  const details: ErrorDetail[] = (input.events ?? []).flatMap((entry, i) =>
    isEventFilter(entry)
      ? []
      : [{ path: `/events/${i}`, message: 'is not an event type, a "<prefix>.*" wildcard or "*"' }],
  );
  if (details.length > 0) {
    throw invalidRequest(
      `Unknown event types in events; the types are ${EVENT_TYPES.join(', ')} (wildcards such as call.* and * too).`,
      details.slice(0, 50),
    );
  }
}

const lockOf = (services: Services, firm: string, endpoint?: string) =>
  redisKeys(services.config).webhookEndpointsLock(firm, endpoint);

/** Creates an endpoint (409 endpoint_limit_reached past 20 a firm); its secret is returned this once. */
export async function createEndpoint(
  services: Services,
  firm: string,
  input: Required<Pick<EndpointInput, 'url' | 'events'>> & EndpointInput,
): Promise<{ endpoint: WebhookEndpointDoc; secret: string }> {
  checkInput(services, input);
  const db = services.mongo.db;
  const secret = newSigningSecret();
  const now = new Date(clock.now());
  const doc: WebhookEndpointDoc = {
    _id: newId('whep', 12),
    firm,
    url: input.url,
    events: [...new Set(input.events)],
    description: input.description ?? null,
    enabled: input.enabled ?? true,
    disabled_reason: input.enabled === false ? 'manual' : null,
    disabled_at: input.enabled === false ? now : null,
    failing_since: null,
    secret: await secretBox(db, firm).seal(SECRET_FIELD, secret),
    previous_secret: null,
    previous_secret_until: null,
    created_at: now,
    updated_at: now,
    listening_since: now,
  };
  // A change to the firm's event listeners from here to its version's bump (listeners.ts): an
  // event recorded meanwhile is fanned out once it is done. The count and the insert under the
  // firm's lock: two creations at once cannot both be the 20th.
  await changeListeners(services, firm, async () => {
    await withRecordLock(services.redis, lockOf(services, firm), async () => {
      const count = await endpointsCollection(db).countDocuments({ firm }, { limit: MAX_ENDPOINTS_PER_FIRM });
      if (count >= MAX_ENDPOINTS_PER_FIRM) {
        throw conflict(
          'endpoint_limit_reached',
          `A firm may have at most ${MAX_ENDPOINTS_PER_FIRM} webhook endpoints; delete one first.`,
        );
      }
      await endpointsCollection(db).insertOne(doc);
    });
    try {
      await bumpVersion(services, firm);
    } catch (err) {
      // Not answered, so its secret was never shown: an endpoint no one can verify is taken back.
      await endpointsCollection(db)
        .deleteOne({ _id: doc._id })
        .catch(() => undefined);
      throw err;
    }
  });
  return { endpoint: doc, secret };
}

/** A firm's endpoints, newest first (at most 20: one small query). */
export function listEndpoints(db: Db, firm: string): Promise<WebhookEndpointDoc[]> {
  return endpointsCollection(db)
    .find({ firm })
    .sort({ created_at: -1, _id: -1 })
    .limit(MAX_ENDPOINTS_PER_FIRM * 2)
    .toArray();
}

export function findEndpoint(db: Db, id: string): Promise<WebhookEndpointDoc | null> {
  return endpointsCollection(db).findOne({ _id: id });
}

/** Writes `set` on an endpoint under its lock (FerretDB rewrites whole documents); the endpoint after. */
export async function setOnEndpoint(
  services: Services,
  endpoint: Pick<WebhookEndpointDoc, '_id' | 'firm'>,
  set: (
    current: WebhookEndpointDoc,
  ) => Partial<WebhookEndpointDoc> | null | Promise<Partial<WebhookEndpointDoc> | null>,
): Promise<WebhookEndpointDoc | null> {
  const coll = endpointsCollection(services.mongo.db);
  return changeListeners(services, endpoint.firm, () =>
    withRecordLock(services.redis, lockOf(services, endpoint.firm, endpoint._id), async () => {
      const current = await coll.findOne({ _id: endpoint._id });
      if (current === null) return null;
      const changes = await set(current);
      if (changes === null) return current;
      await coll.updateOne({ _id: endpoint._id }, { $set: changes });
      await bumpVersion(services, endpoint.firm);
      return { ...current, ...changes };
    }),
  );
}

/** PATCH: url, events, description, enabled (enabling again clears why it was disabled). */
export async function updateEndpoint(
  services: Services,
  endpoint: WebhookEndpointDoc,
  input: EndpointInput,
): Promise<WebhookEndpointDoc | null> {
  checkInput(services, input);
  const now = new Date(clock.now());
  return setOnEndpoint(services, endpoint, async (current) => {
    if (input.enabled === true && !current.enabled) await forgetFailingStreak(services, current._id);
    return {
      ...(input.url === undefined ? {} : { url: input.url }),
      ...(input.events === undefined ? {} : { events: [...new Set(input.events)] }),
      ...(input.description === undefined ? {} : { description: input.description }),
      ...(input.enabled === undefined || input.enabled === current.enabled
        ? {}
        : input.enabled
          ? {
              enabled: true,
              disabled_reason: null,
              disabled_at: null,
              failing_since: null,
              listening_since: now,
            }
          : { enabled: false, disabled_reason: 'manual' as const, disabled_at: now }),
      updated_at: now,
    };
  });
}

/**
 * Forgets the endpoint's failing streak, kept in Redis while the endpoint is enabled
 * (deliveries.ts), with no expiry. An endpoint enabled again starts it afresh: one left from
 * before it was disabled (by the firm, or by a 410) would show as its failing_since and disable
 * it at its first failure after. A deleted endpoint's would stay in Redis for good.
 */
async function forgetFailingStreak(services: Services, endpoint: string): Promise<void> {
  await services.redis.del(redisKeys(services.config).webhookFailingSince(endpoint));
}

export async function deleteEndpoint(services: Services, endpoint: WebhookEndpointDoc): Promise<void> {
  await changeListeners(services, endpoint.firm, async () => {
    await withRecordLock(services.redis, lockOf(services, endpoint.firm), () =>
      endpointsCollection(services.mongo.db).deleteOne({ _id: endpoint._id }),
    );
    await bumpVersion(services, endpoint.firm);
  });
  await forgetFailingStreak(services, endpoint._id);
}

/**
 * The firm's endpoints as the workers use them: cached per process, read again whenever the
 * firm's version (a new random value after every write) has changed, and at least once a minute
 * (core/platform/cache-version.ts), so a change applies to the next event or delivery without a
 * MongoDB read for each.
 */
const cached = new Map<string, { stamp: CopyStamp; endpoints: WebhookEndpointDoc[] }>();
export async function firmEndpoints(services: Services, firm: string): Promise<WebhookEndpointDoc[]> {
  const version = await services.redis.get(redisKeys(services.config).webhookEndpointsVersion(firm));
  const known = cached.get(firm);
  if (known !== undefined && copyIsCurrent(known.stamp, version)) return known.endpoints;
  const endpoints = await listEndpoints(services.mongo.db, firm);
  cached.delete(firm);
  if (cached.size >= 10_000) cached.delete(cached.keys().next().value!);
  cached.set(firm, { stamp: copyStamp(version), endpoints });
  return endpoints;
}

/** A fresh random version, not a counter (core/platform/cache-version.ts). */
async function bumpVersion(services: Services, firm: string): Promise<void> {
  await bumpCacheVersion(services.redis, redisKeys(services.config).webhookEndpointsVersion(firm));
}

/** A new secret; the current one keeps signing beside it for 24 h. Returns the new secret, shown once. */
export async function rotateSecret(
  services: Services,
  endpoint: WebhookEndpointDoc,
): Promise<{ endpoint: WebhookEndpointDoc; secret: string } | null> {
  const secret = newSigningSecret();
  const box = secretBox(services.mongo.db, endpoint.firm);
  const sealed = await box.seal(SECRET_FIELD, secret);
  const now = clock.now();
  // The previous secret is the one stored when the lock is held: of two rotations at once, the
  // second keeps the first's new secret signing beside its own, not the one both read before.
  const updated = await setOnEndpoint(services, endpoint, async (current) => ({
    secret: sealed,
    // Re-sealed under the field it now lives in (a sealed value opens only under its own field's name).
    previous_secret: await box.seal(PREVIOUS_FIELD, await box.open(SECRET_FIELD, current.secret)),
    previous_secret_until: new Date(now + ROTATED_SECRET_VALID_MS),
    updated_at: new Date(now),
  }));
  return updated === null ? null : { endpoint: updated, secret };
}

/** The secrets a delivery is signed with now: the current one, and the previous one within its 24 h. */
export async function signingSecrets(
  db: Db,
  endpoint: WebhookEndpointDoc,
  now = clock.now(),
): Promise<string[]> {
  const box = secretBox(db, endpoint.firm);
  const secrets = [await opened(box, endpoint, SECRET_FIELD, endpoint.secret)];
  if (
    endpoint.previous_secret !== null &&
    endpoint.previous_secret_until !== null &&
    endpoint.previous_secret_until.getTime() > now
  ) {
    secrets.push(await opened(box, endpoint, PREVIOUS_FIELD, endpoint.previous_secret));
  }
  return secrets;
}

/**
 * Opened secrets by endpoint, field and sealed value (a rotation seals a new value: a new entry),
 * so a busy endpoint's deliveries do not each read its firm's data key. Bounded.
 */
const openedSecrets = new Map<string, string>();
async function opened(
  box: ReturnType<typeof secretBox>,
  endpoint: WebhookEndpointDoc,
  field: string,
  sealed: Sealed,
): Promise<string> {
  const memo = `${endpoint._id}|${field}|${sealed.data}`;
  const known = openedSecrets.get(memo);
  if (known !== undefined) return known;
  const secret = await box.open(field, sealed);
  if (openedSecrets.size >= 10_000) openedSecrets.delete(openedSecrets.keys().next().value!);
  openedSecrets.set(memo, secret);
  return secret;
}
