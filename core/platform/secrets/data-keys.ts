import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { claim } from '../db/claim.js';
import { COLLECTIONS, collection } from '../db/collections.js';
import { isSealed, open, seal, type Keyring, type Sealed } from './envelope.js';

// A data key per firm (firm_keys, `_id` = the firm slug): 32 random bytes, stored only wrapped
// with the master key (`kid` names which). Made the first time a secret of the firm is sealed, by a
// claim (an insert by _id), so two processes sealing at once agree on one key. The keyring is
// registered on the database handle by whoever wires the process (createServices, release), like
// the read cache; a process without one can neither seal nor open a secret, and says so.

interface FirmKeyDoc extends Sealed {
  _id: string;
  /** The master key it is wrapped with (MasterKey.id). */
  kid: string;
  created_at: Date;
  updated_at: Date;
}

export class SecretsKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretsKeyError';
  }
}

const keyrings = new WeakMap<Db, Keyring>();
const firmKeys = (db: Db) => collection<FirmKeyDoc>(db, COLLECTIONS.firmKeys);
const wrapAad = (firm: string) => `intake-service/firm-data-key/v1|${firm}`;

/** The master keys this database handle's secrets are sealed under (SECRETS_KEY, SECRETS_KEY_PREVIOUS). */
export function registerKeyring(db: Db, keyring: Keyring): void {
  keyrings.set(db, keyring);
}

export function keyringOf(db: Db): Keyring {
  const keyring = keyrings.get(db);
  if (keyring === undefined) throw new SecretsKeyError('no SECRETS_KEY is registered for this database');
  return keyring;
}

/** Per keyring, unwrapped keys by firm and wrapped value (a re-wrap or a new key is a new entry), bounded. */
const unwrappedBy = new WeakMap<Keyring, Map<string, Buffer>>();
const MAX_UNWRAPPED = 10_000;

function unwrap(keyring: Keyring, doc: FirmKeyDoc): Buffer {
  let unwrapped = unwrappedBy.get(keyring);
  if (unwrapped === undefined) unwrappedBy.set(keyring, (unwrapped = new Map()));
  const memo = `${doc._id}\u0001${doc.kid}\u0001${doc.data}`;
  const known = unwrapped.get(memo);
  if (known !== undefined) return known;
  const master = keyring.all.get(doc.kid);
  if (master === undefined) {
    throw new SecretsKeyError(
      `the data key of the firm ${doc._id} is wrapped with a master key that is neither SECRETS_KEY nor in SECRETS_KEY_PREVIOUS (key id ${doc.kid})`,
    );
  }
  const key = open(master.key, doc, wrapAad(doc._id));
  if (unwrapped.size >= MAX_UNWRAPPED) unwrapped.delete(unwrapped.keys().next().value!);
  unwrapped.set(memo, key);
  return key;
}

function wrapped(keyring: Keyring, firm: string, key: Buffer, now: Date): FirmKeyDoc {
  return {
    _id: firm,
    kid: keyring.current.id,
    ...seal(keyring.current.key, key, wrapAad(firm)),
    created_at: now,
    updated_at: now,
  };
}

/** The firm's data key; made (once, whoever races) when `create` and the firm has none; else null. */
export async function firmDataKey(db: Db, firm: string, create: boolean): Promise<Buffer | null> {
  const keyring = keyringOf(db);
  const stored = await firmKeys(db).findOne({ _id: firm });
  if (stored !== null) return unwrap(keyring, stored);
  if (!create) return null;
  const key = randomBytes(32);
  if (await claim(firmKeys(db), wrapped(keyring, firm, key, new Date()))) return key;
  const winner = await firmKeys(db).findOne({ _id: firm });
  if (winner === null)
    throw new SecretsKeyError(`the data key of the firm ${firm} vanished while it was made`);
  return unwrap(keyring, winner);
}

/**
 * Wraps every data key not wrapped with the current master key again with it (release, after
 * SECRETS_KEY changed): afterwards the previous key is no longer needed. Safe to run again.
 */
export async function rewrapFirmKeys(db: Db): Promise<{ rewrapped: number; current: number }> {
  const keyring = keyringOf(db);
  let rewrapped = 0;
  let current = 0;
  for await (const doc of firmKeys(db).find({})) {
    if (doc.kid === keyring.current.id) {
      current += 1;
      continue;
    }
    const key = unwrap(keyring, doc);
    const next = { ...wrapped(keyring, doc._id, key, new Date()), created_at: doc.created_at };
    await firmKeys(db).replaceOne({ _id: doc._id }, next);
    rewrapped += 1;
  }
  return { rewrapped, current };
}

/** Additional data naming what a sealed value is: the firm and the field. */
const valueAad = (firm: string, field: string) => `intake-service/secret/v1|${firm}|${field}`;

/** Seals and opens one firm's secrets; its data key is read (or made, for a seal) once, when first needed. */
export interface SecretBox {
  seal(field: string, value: string): Promise<Sealed>;
  /** A sealed value opened; plaintext (stored before sealing, not yet migrated) as it is. */
  open(field: string, stored: unknown): Promise<string>;
}

/**
 * The data keys this process has opened, by database handle and firm, bounded. A firm's data key
 * never changes once made (a new master key only wraps it again), so opening a secret needs no
 * read of `firm_keys` after the first; a key that no longer opens what it should (the firm's key
 * document replaced under us, as a test's fresh database does) is dropped and read again once.
 * Sealing always reads the stored key, so nothing is sealed with a key the database lacks.
 */
const openedKeys = new WeakMap<Db, Map<string, Buffer>>();
const MAX_OPENED = 10_000;

function rememberKey(db: Db, firm: string, key: Buffer): void {
  let keys = openedKeys.get(db);
  if (keys === undefined) openedKeys.set(db, (keys = new Map()));
  if (!keys.has(firm) && keys.size >= MAX_OPENED) keys.delete(keys.keys().next().value!);
  keys.set(firm, key);
}

export function secretBox(db: Db, firm: string): SecretBox {
  let known: Buffer | null = null;
  const keyFor = async (create: boolean): Promise<Buffer | null> => {
    known ??= await firmDataKey(db, firm, create);
    if (known !== null) rememberKey(db, firm, known);
    return known;
  };
  return {
    async seal(field, value) {
      const k = (await keyFor(true))!;
      return seal(k, value, valueAad(firm, field));
    },
    async open(field, stored) {
      if (typeof stored === 'string') return stored;
      if (!isSealed(stored))
        throw new SecretsKeyError(`the stored ${field} of the firm ${firm} is not a secret`);
      const remembered = known === null ? openedKeys.get(db)?.get(firm) : undefined;
      if (remembered !== undefined) {
        try {
          return open(remembered, stored, valueAad(firm, field)).toString('utf8');
        } catch {
          openedKeys.get(db)?.delete(firm);
        }
      }
      const k = await keyFor(false);
      if (k === null) throw new SecretsKeyError(`the firm ${firm} has a sealed ${field} but no data key`);
      return open(k, stored, valueAad(firm, field)).toString('utf8');
    },
  };
}
