import type { Static } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { settingsView } from '../../api/routes/firms/present.js';
import type { FirmSettingsView } from '../../api/routes/firms/schema.js';
import {
  DEFAULT_SETTINGS,
  mergeSettings,
  type FirmSettings,
  type FirmSettingsInput,
} from '../../core/domain/firms/firm-settings.js';
import type { UrlPolicy } from '../../core/platform/url-policy.js';

// The settings are declared once, as a schema (core/domain/firms/firm-settings.ts); the stored
// type, the request type and the type of a read are derived from it. What must hold between
// them is checked by the compiler: `npm run typecheck` fails when it stops holding.

type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;
type Shown = Static<typeof FirmSettingsView>;

const requestsSendEverySetting: SameKeys<FirmSettings, FirmSettingsInput> = true;
const readsShowEverySetting: SameKeys<FirmSettings, Shown> = true;

export function compileTimeOnly(settings: FirmSettings, shown: Shown): unknown[] {
  const oauth = { region: 'us', status: 'connected', connected_at: '' } as const;
  return [
    // @ts-expect-error -- a setting the schema does not declare cannot be read
    settings.no_such_setting,
    // @ts-expect-error -- a read has the mask in place of a secret, never a value
    { ...shown, voice_webhook_secret: 'a-secret-value' } satisfies Shown,
    // @ts-expect-error -- nor inside a setting
    { ...shown, crm: { provider: 'clio', access_token: 'a-token' } } satisfies Shown,
    // @ts-expect-error -- a request cannot set Clio's OAuth state (only the OAuth callback does)
    { crm: { provider: 'clio', oauth } } satisfies FirmSettingsInput,
  ];
}

const policy: UrlPolicy = { allowHttpAndLoopback: false };

describe('firm settings, declared once', () => {
  it('requests and reads cover every stored setting (checked at compile time)', () => {
    expect([requestsSendEverySetting, readsShowEverySetting]).toEqual([true, true]);
  });

  it('a read shows every secret as the mask, top-level and inside a setting', () => {
    const secrets = ['voice-secret-1', 'booking-secret-2', 'clio-token-3', 'cal-key-4'];
    const settings = mergeSettings(
      DEFAULT_SETTINGS,
      {
        voice_webhook_secret: secrets[0],
        booking_webhook_secret: secrets[1],
        crm: { provider: 'clio', access_token: secrets[2]! },
        booking: { provider: 'calcom', api_key: secrets[3]!, event_type_id: 3 },
      },
      policy,
    );
    const shown = settingsView(settings);
    for (const secret of secrets) expect(JSON.stringify(shown)).not.toContain(secret);
    expect(shown).toEqual({
      ...DEFAULT_SETTINGS,
      voice_webhook_secret: '********',
      booking_webhook_secret: '********',
      crm: { provider: 'clio', access_token: '********' },
      booking: { provider: 'calcom', api_key: '********', event_type_id: 3 },
    });
  });

  it('a read shows only what the schema declares', () => {
    const stored = {
      ...DEFAULT_SETTINGS,
      calling_window: { start: '09:00', end: '17:00', days: [1], note: 'internal' },
      internal_state: 'x',
    } as FirmSettings;
    expect(settingsView(stored)).toEqual({
      ...DEFAULT_SETTINGS,
      calling_window: { start: '09:00', end: '17:00', days: [1] },
    });
  });
});
