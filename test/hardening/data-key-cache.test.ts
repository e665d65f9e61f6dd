// A firm's data key, once opened, is kept by the process (core/platform/secrets/data-keys.ts): a
// secret is opened without reading `firm_keys` again (the pipeline of one call opens secrets about
// a dozen times), and a key that no longer opens a secret (another process made the firm's key
// anew on a fresh database) is dropped and read again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoClient, type Db } from 'mongodb';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { registerKeyring, secretBox } from '../../core/platform/secrets/data-keys.js';
import { createKeyring } from '../../core/platform/secrets/envelope.js';
import { rand, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let other: MongoClient;
let otherDb: Db;

beforeAll(async () => {
  stack = await startStack();
  // A second process's handle on the same database, with the same master key.
  other = new MongoClient(stack.config.mongodbUri);
  otherDb = other.db();
  registerKeyring(otherDb, createKeyring(stack.config.secretsKey));
});
afterAll(async () => {
  await other?.close();
  await stack?.stop();
});

const firmKeys = () => stack.services.mongo.db.collection<{ _id: string }>(COLLECTIONS.firmKeys);

describe("a firm's data key kept by the process", () => {
  it('opens a secret without reading the stored key again', async () => {
    const db = stack.services.mongo.db;
    const firm = `firm-${rand(8)}`;
    const sealed = await secretBox(db, firm).seal('slack_webhook_url', 'https://hooks.example/one');
    expect(await secretBox(db, firm).open('slack_webhook_url', sealed)).toBe('https://hooks.example/one');
    // With the stored key gone, only the process's own copy can open it.
    await firmKeys().deleteOne({ _id: firm });
    expect(await secretBox(db, firm).open('slack_webhook_url', sealed)).toBe('https://hooks.example/one');
  });

  it('reads the key again when the kept one no longer opens what is stored', async () => {
    const db = stack.services.mongo.db;
    const firm = `firm-${rand(8)}`;
    const first = await secretBox(db, firm).seal('calcom_api_key', 'cal_live_first');
    expect(await secretBox(db, firm).open('calcom_api_key', first)).toBe('cal_live_first');
    // Another process, on a database whose key for the firm is made anew, seals a new value.
    await firmKeys().deleteOne({ _id: firm });
    const second = await secretBox(otherDb, firm).seal('calcom_api_key', 'cal_live_second');
    expect(await secretBox(db, firm).open('calcom_api_key', second)).toBe('cal_live_second');
    // And the process now keeps the new key: the old value no longer opens.
    await expect(secretBox(db, firm).open('calcom_api_key', first)).rejects.toThrow();
  });

  it('seals with the stored key, never with a kept one the database lacks', async () => {
    const db = stack.services.mongo.db;
    const firm = `firm-${rand(8)}`;
    await secretBox(db, firm).seal('clio_access_token', 'token-one');
    await firmKeys().deleteOne({ _id: firm });
    // A seal now makes and stores a new key, so another process can open what it sealed.
    const sealed = await secretBox(db, firm).seal('clio_access_token', 'token-two');
    expect(await firmKeys().countDocuments({ _id: firm })).toBe(1);
    expect(await secretBox(otherDb, firm).open('clio_access_token', sealed)).toBe('token-two');
  });
});
