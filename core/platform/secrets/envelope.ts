import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

// Envelope encryption of the secrets the service stores (docs/operations.md#secrets-at-rest):
// each value is sealed with AES-256-GCM under a data key of its firm (data-keys.ts), and each data
// key is itself sealed ("wrapped") under the master key from SECRETS_KEY. The additional data of
// every seal names what the value is (firm and field), so a sealed value copied to another field
// or another firm does not open. Rotation: SECRETS_KEY is the key new wraps use, and the keys of
// SECRETS_KEY_PREVIOUS still open what they wrapped until `release` has wrapped it again.

/** A value sealed with AES-256-GCM (96-bit nonce, 128-bit tag), base64url: what is stored in place of a secret. */
export interface Sealed {
  sealed: 'aes-256-gcm';
  iv: string;
  data: string;
  tag: string;
}

export interface MasterKey {
  /** A fingerprint naming the key (not secret): stored with what it wraps. */
  id: string;
  key: Buffer;
}

/** The master keys: `current` wraps, every key of `all` (current included) unwraps. */
export interface Keyring {
  current: MasterKey;
  all: Map<string, MasterKey>;
}

/** 32 bytes from base64 or base64url text (`openssl rand -base64 32`), or null. */
export function decodeMasterKey(text: string): Buffer | null {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(trimmed)) return null;
  const key = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return key.length === 32 ? key : null;
}

const masterKey = (text: string): MasterKey => {
  const key = decodeMasterKey(text);
  if (key === null) throw new Error('a master key must be 32 bytes, base64');
  const id = createHash('sha256').update('intake-service/secrets-key-id/v1|').update(key).digest('hex');
  return { id: id.slice(0, 16), key };
};

export function createKeyring(current: string, previous: readonly string[] = []): Keyring {
  const head = masterKey(current);
  const all = new Map<string, MasterKey>([[head.id, head]]);
  for (const text of previous) {
    const key = masterKey(text);
    if (!all.has(key.id)) all.set(key.id, key);
  }
  return { current: head, all };
}

export const isSealed = (value: unknown): value is Sealed =>
  typeof value === 'object' &&
  value !== null &&
  (value as Sealed).sealed === 'aes-256-gcm' &&
  typeof (value as Sealed).iv === 'string' &&
  typeof (value as Sealed).data === 'string' &&
  typeof (value as Sealed).tag === 'string';

export function seal(key: Buffer, plaintext: Buffer | string, aad: string): Sealed {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return {
    sealed: 'aes-256-gcm',
    iv: iv.toString('base64url'),
    data: data.toString('base64url'),
    tag: cipher.getAuthTag().toString('base64url'),
  };
}

/** The plaintext of a sealed value; throws when the key or the additional data is not the one it was sealed with. */
export function open(key: Buffer, sealed: Sealed, aad: string): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64url'));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64url')), decipher.final()]);
}
