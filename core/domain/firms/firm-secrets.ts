import type { TSchema } from '@sinclair/typebox';
import type { Db } from 'mongodb';
import { COLLECTIONS } from '../../platform/db/collections.js';
import { sealedFieldName } from '../../platform/secrets/sealed-fields.js';
import { secretBox } from '../../platform/secrets/data-keys.js';
import { FirmSettings, isSecret } from './firm-settings.js';

// A firm's settings as stored: every write-only value of the settings schema (firm-settings.ts:
// crm.access_token, booking.api_key, voice_webhook_secret, booking_webhook_secret, and any secret
// added there later) sealed with the firm's data key (docs/operations.md#secrets-at-rest).
// Readers never see the sealed form: firms.ts opens the settings when it reads them.

/** The dotted paths of the settings schema's secrets, found by walking it (unions and objects). */
function secretPaths(schema: TSchema, prefix: string): string[] {
  if (isSecret(schema)) return [prefix];
  const found = new Set<string>();
  const members: TSchema[] = [...((schema.anyOf as TSchema[] | undefined) ?? [])];
  for (const member of members) for (const path of secretPaths(member, prefix)) found.add(path);
  const properties = schema.properties as Record<string, TSchema> | undefined;
  for (const [key, child] of Object.entries(properties ?? {})) {
    for (const path of secretPaths(child, prefix === '' ? key : `${prefix}.${key}`)) found.add(path);
  }
  return [...found];
}

export const SETTINGS_SECRET_PATHS: readonly string[] = secretPaths(FirmSettings, '');

const parentOf = (root: Record<string, unknown>, path: string) => {
  const parts = path.split('.');
  let node: unknown = root;
  for (const part of parts.slice(0, -1)) {
    if (typeof node !== 'object' || node === null) return null;
    node = (node as Record<string, unknown>)[part];
  }
  return typeof node === 'object' && node !== null
    ? { node: node as Record<string, unknown>, key: parts.at(-1)! }
    : null;
};

/** Copies `settings` with each secret transformed (absent ones stay absent). */
async function mapSecrets(
  settings: object,
  transform: (path: string, value: unknown) => Promise<unknown>,
): Promise<Record<string, unknown>> {
  const copy = structuredClone(settings) as Record<string, unknown>;
  for (const path of SETTINGS_SECRET_PATHS) {
    const at = parentOf(copy, path);
    if (at === null || at.node[at.key] === undefined) continue;
    at.node[at.key] = await transform(path, at.node[at.key]);
  }
  return copy;
}

const field = (path: string) => sealedFieldName(COLLECTIONS.firms, `settings.${path}`);

/** The settings as stored: each plaintext secret sealed (a sealed one kept). */
export async function sealSettings(db: Db, firm: string, settings: FirmSettings): Promise<unknown> {
  const box = secretBox(db, firm);
  return mapSecrets(settings, async (path, value) =>
    typeof value === 'string' ? box.seal(field(path), value) : value,
  );
}

/** The settings as readers use them: each sealed secret opened. */
export async function openSettings(db: Db, firm: string, stored: unknown): Promise<FirmSettings> {
  const box = secretBox(db, firm);
  return (await mapSecrets(stored as object, (path, value) =>
    box.open(field(path), value),
  )) as unknown as FirmSettings;
}
