// The stored secrets (docs/operations.md#secrets-at-rest): what release seals is every write-only
// value of the firm settings schema, and a sealed value opens only with its key and for its field.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SETTINGS_SECRET_PATHS } from '../../core/domain/firms/firm-secrets.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createKeyring, decodeMasterKey, open, seal } from '../../core/platform/secrets/envelope.js';
import { SEALED_FIELDS } from '../../core/platform/secrets/sealed-fields.js';

describe('sealed fields', () => {
  it('release seals exactly the settings schema’s write-only values', () => {
    expect(SETTINGS_SECRET_PATHS).toEqual(
      expect.arrayContaining([
        'crm.access_token',
        'booking.api_key',
        'voice_webhook_secret',
        'booking_webhook_secret',
      ]),
    );
    const released = SEALED_FIELDS[COLLECTIONS.firms]!.map((f) => f.path).sort();
    expect(released).toEqual(SETTINGS_SECRET_PATHS.map((p) => `settings.${p}`).sort());
  });
});

describe('envelope', () => {
  const key = randomBytes(32);
  it('opens what it sealed, only with the same key and the same additional data', () => {
    const sealed = seal(key, 'whsec_123', 'firm-a|voice');
    expect(JSON.stringify(sealed)).not.toContain('whsec_123');
    expect(open(key, sealed, 'firm-a|voice').toString()).toBe('whsec_123');
    expect(() => open(key, sealed, 'firm-b|voice')).toThrow();
    expect(() => open(randomBytes(32), sealed, 'firm-a|voice')).toThrow();
    expect(() =>
      open(key, { ...sealed, data: Buffer.from('x').toString('base64url') }, 'firm-a|voice'),
    ).toThrow();
  });

  it('reads master keys of 32 bytes in base64 or base64url only; the previous keys open, the current one wraps', () => {
    const text = randomBytes(32).toString('base64');
    expect(decodeMasterKey(text)?.length).toBe(32);
    expect(decodeMasterKey(Buffer.from(decodeMasterKey(text)!).toString('base64url'))?.length).toBe(32);
    expect(decodeMasterKey(randomBytes(16).toString('base64'))).toBeNull();
    expect(decodeMasterKey('not a key')).toBeNull();
    const old = randomBytes(32).toString('base64');
    const ring = createKeyring(text, [old, text]);
    expect(ring.all.size).toBe(2);
    expect(ring.current.key.equals(decodeMasterKey(text)!)).toBe(true);
  });
});
