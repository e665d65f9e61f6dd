import { KindGuard, type Static, type TSchema } from '@sinclair/typebox';
import {
  ClioTokenCrm,
  FirmSettings,
  NoCrm,
  SECRET_MASK,
  isSecret,
} from '../../../core/domain/firms/firm-settings.js';
import type { FirmDoc } from '../../../core/domain/firms/firms.js';
import { ClioOAuthView, type FirmResponse, type FirmSettingsView } from './schema.js';

export function firmView(firm: FirmDoc): Static<typeof FirmResponse> {
  return {
    slug: firm._id,
    name: firm.name,
    settings: settingsView(firm.settings),
    created_at: firm.created_at.toISOString(),
    updated_at: firm.updated_at.toISOString(),
  };
}

/**
 * The value as its schema shows it: only the properties the schema declares (a field stored by
 * an older version, or by mistake, is never sent), every write-only value as the mask.
 * Undefined: nothing to show.
 */
function shownValue(schema: TSchema, value: unknown): unknown {
  if (isSecret(schema)) return SECRET_MASK;
  if (typeof value !== 'object' || value === null) return value;
  if (KindGuard.IsObject(schema) && !Array.isArray(value)) {
    const shown: Record<string, unknown> = {};
    for (const [key, property] of Object.entries(schema.properties)) {
      const field = Object.hasOwn(value, key)
        ? shownValue(property, (value as Record<string, unknown>)[key])
        : undefined;
      if (field !== undefined) shown[key] = field;
    }
    return shown;
  }
  if (KindGuard.IsArray(schema) && Array.isArray(value))
    return value.map((item) => shownValue(schema.items, item) ?? null);
  // Which branch an object belongs to is its owner's to say: such settings are presented by hand.
  if (KindGuard.IsUnion(schema)) throw new Error('an object in a union needs its own presenter');
  // An object where the schema has none.
  return undefined;
}

const { crm: _crm, ...settingsBesidesCrm } = FirmSettings.properties;

/** A firm's settings as a read shows them (FirmSettingsView): secrets masked, Clio's OAuth state flat. */
export function settingsView(settings: FirmSettings): Static<typeof FirmSettingsView> {
  const shown = shownValue({ ...FirmSettings, properties: settingsBesidesCrm }, settings) as Omit<
    Static<typeof FirmSettingsView>,
    'crm'
  >;
  const crm = settings.crm;
  // The stored crm's branch picks the shown one (a Clio connected with OAuth shows its state flat).
  const shownCrm =
    crm.provider === 'none'
      ? shownValue(NoCrm, crm)
      : 'oauth' in crm
        ? shownValue(ClioOAuthView, { provider: crm.provider, ...crm.oauth })
        : shownValue(ClioTokenCrm, crm);
  return { ...shown, crm: shownCrm as Static<typeof FirmSettingsView>['crm'] };
}
