import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim } from '../../platform/db/claim.js';
import { cachedRead, cachedReadShared, changeCached, type Frozen } from '../../platform/db/read-cache.js';
import { conflict, notFound, quote } from '../../platform/errors.js';
import type { UrlPolicy } from '../../platform/url-policy.js';
import {
  DEFAULT_SETTINGS,
  mergeSettings,
  withDefaults,
  type FirmSettings,
  type FirmSettingsInput,
} from './firm-settings.js';
import { openSettings, sealSettings } from './firm-secrets.js';
import { withFirmLock } from './firm-lock.js';
import { refuseReservedSlug } from './reserved-slugs.js';
import type { Services } from '../../wiring/services.js';

export interface FirmDoc {
  _id: string;
  name: string;
  settings: FirmSettings;
  created_at: Date;
  updated_at: Date;
}

// As stored, the settings' secrets are sealed (firm-secrets.ts, docs/operations.md#secrets-at-rest):
// every FirmDoc read here has them opened, and every write seals them again.
const firms = (db: Db) => collection<FirmDoc>(db, COLLECTIONS.firms);

/** The document as stored: the settings' secrets sealed. */
async function stored(db: Db, firm: FirmDoc): Promise<FirmDoc> {
  return { ...firm, settings: (await sealSettings(db, firm._id, firm.settings)) as FirmSettings };
}

export async function getFirm(db: Db, slug: string): Promise<FirmDoc | null> {
  // Kept in the read cache with its defaults applied: each caller gets its own copy of that.
  return cachedRead(db, COLLECTIONS.firms, slug, () => loadFirm(db, slug));
}

/**
 * The firm as `getFirm` reads it, but the read cache's own document, frozen, for a caller that
 * only reads it (a webhook's authentication, on every delivery): no copy made.
 */
export async function peekFirm(db: Db, slug: string): Promise<Frozen<FirmDoc> | null> {
  return cachedReadShared(db, COLLECTIONS.firms, slug, () => loadFirm(db, slug));
}

/** The firm as stored now, its secrets opened: no read cache (for a writer holding its lock). */
export async function loadFirm(db: Db, slug: string): Promise<FirmDoc | null> {
  const raw = await firms(db).findOne({ _id: slug });
  return raw === null ? null : opened(db, raw);
}

const opened = async (db: Db, raw: FirmDoc): Promise<FirmDoc> => ({
  ...raw,
  settings: withDefaults(await openSettings(db, raw._id, raw.settings)),
});

/** Every firm as `getFirm` reads it, by slug, from one cursor (a pass over every firm). */
export async function* everyFirm(db: Db): AsyncGenerator<FirmDoc> {
  for await (const raw of firms(db).find({}).sort({ _id: 1 })) yield await opened(db, raw);
}

/** Every firm's slug, from one cursor (a pass over every firm that needs no more of it). */
export async function* everyFirmSlug(db: Db): AsyncGenerator<string> {
  for await (const raw of firms(db)
    .find({}, { projection: { _id: 1 } })
    .sort({ _id: 1 }))
    yield raw._id;
}

export async function createFirm(
  db: Db,
  input: { slug: string; name: string; settings?: FirmSettingsInput },
  urlPolicy: UrlPolicy,
): Promise<FirmDoc> {
  refuseReservedSlug(input.slug);
  const now = new Date();
  const doc: FirmDoc = {
    _id: input.slug,
    name: input.name,
    settings: mergeSettings(DEFAULT_SETTINGS, input.settings ?? {}, urlPolicy),
    created_at: now,
    updated_at: now,
  };
  if (!(await claim(firms(db), await stored(db, doc)))) {
    throw conflict('firm_exists', `A firm with the slug ${quote(input.slug)} already exists.`);
  }
  return doc;
}

/**
 * Writes `input` merged into `firm`: the firm read by the caller holding its lock (firm-lock.ts),
 * since the whole document is replaced.
 */
export async function updateFirm(
  db: Db,
  firm: FirmDoc,
  input: { name?: string; settings?: FirmSettingsInput },
  urlPolicy: UrlPolicy,
): Promise<FirmDoc> {
  const next: FirmDoc = {
    ...firm,
    name: input.name ?? firm.name,
    settings:
      input.settings === undefined ? firm.settings : mergeSettings(firm.settings, input.settings, urlPolicy),
    updated_at: new Date(),
  };
  const sealed = await stored(db, next);
  const result = await changeCached(db, () => firms(db).replaceOne({ _id: firm._id }, sealed));
  if (result.matchedCount === 0) throw notFound('firm');
  return next;
}

/**
 * Replaces the firm's settings.crm (the Clio OAuth callback and a refused refresh), under the
 * firm's lock and read fresh inside it (the other secrets stay sealed).
 */
export async function setFirmCrm(
  services: Pick<Services, 'redis' | 'config' | 'mongo'>,
  slug: string,
  crm: FirmSettings['crm'],
): Promise<void> {
  const db = services.mongo.db;
  await withFirmLock(services, slug, async () => {
    const firm = await firms(db).findOne({ _id: slug });
    if (firm === null) throw notFound('firm');
    const next: FirmDoc = { ...firm, settings: { ...firm.settings, crm }, updated_at: new Date() };
    await changeCached(db, () => firms(db).replaceOne({ _id: slug }, next));
  });
}
