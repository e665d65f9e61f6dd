// SECRETS_KEY (docs/operations.md#secrets-at-rest): `release` seals the secrets an older version
// stored in plaintext (once: a second run changes nothing); a new SECRETS_KEY with the old one in
// SECRETS_KEY_PREVIOUS reads everything, `release` wraps every data key with the new key, and then
// the old key is no longer needed (nor enough); no process starts without the key.
//
// Release runs on every deploy: a second run over the same database succeeds and creates nothing
// (it once lost its connection there: FerretDB drops it when one createIndexes names indexes
// that already exist, core/platform/db/indexes.ts).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { EJSON } from 'bson';
import { MongoClient } from 'mongodb';
import { entryArgs } from '../../scripts/local/compiled.js';
import { freshMongoUri, rand, startStack, type Stack } from '../helpers/stack.js';
import { postSigned, retellCallAnalyzed } from '../webhooks/support.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const newKey = () => randomBytes(32).toString('base64');

/** Runs `npm run release`'s script (as the Procfile's release process) with this environment. */
function release(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, entryArgs('core/platform/db/release.ts'), {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', ...env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

const stacks: Stack[] = [];
/**
 * A web process over `mongodbUri` with these keys; stopped without dropping the database. Each
 * ensures the indexes, as a deploy's release does (`noRelease` leaves that to a spawned release).
 */
async function webWith(mongodbUri: string, keys: Record<string, string>, noRelease = false): Promise<Stack> {
  const stack = await startStack({ env: { MONGODB_URI: mongodbUri, ...keys }, noRelease });
  stacks.push(stack);
  return stack;
}

/** The fields of the release's log line whose msg is `msg` (LOG_LEVEL=info, one JSON line each). */
function logged(output: string, msg: string): Record<string, unknown> {
  const line = output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.msg === msg);
  expect(line, `no "${msg}" in the release's output:\n${output}`).toBeDefined();
  return line!;
}
afterAll(async () => {
  for (const stack of stacks) await stack.web.stop().catch(() => {});
  const last = stacks.at(-1);
  if (last !== undefined) {
    const client = await MongoClient.connect(last.env.MONGODB_URI!);
    await client.db().dropDatabase();
    await client.close();
  }
});

const raw = async (stack: Stack) => {
  const db = stack.services.mongo.db;
  const out: Record<string, unknown[]> = {};
  for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
    out[name] = await db.collection(name).find({}).sort({ _id: 1 }).toArray();
  }
  return out;
};
const text = (docs: unknown) => EJSON.stringify(docs, { relaxed: true });

/** A call_analyzed delivery signed with `secret`: 200 when the firm's stored secret is read as that. */
const signedDelivery = (stack: Stack, slug: string, secret: string) =>
  postSigned(stack, slug, secret, retellCallAnalyzed({ providerCallId: `call_${rand(8)}` }));

describe('release seals what was stored in plaintext', { timeout: 180_000 }, () => {
  it('a firm and a Clio connection stored before secrets were sealed: sealed by release, still used, and a second release changes nothing', async () => {
    const key = newKey();
    const uri = freshMongoUri();
    const stack = await webWith(uri, { SECRETS_KEY: key }, true);
    const slug = `old-${rand(4)}`;
    const secrets = {
      voice: `whsec_old_${rand(10)}`,
      booking: `whsec_oldcal_${rand(10)}`,
      clio: `clio_old_${rand(10)}`,
      cal: `cal_old_${rand(10)}`,
      access: `access_old_${rand(10)}`,
      refresh: `refresh_old_${rand(10)}`,
      waitingAccess: `access_waiting_${rand(10)}`,
      waitingRefresh: `refresh_waiting_${rand(10)}`,
    };
    const now = new Date();
    const db = stack.services.mongo.db;
    // As an older version wrote them, around the API.
    await db.collection<any>('firms').insertOne({
      _id: slug,
      name: 'Old Firm',
      settings: {
        timezone: 'America/New_York',
        notification_emails: [],
        crm: { provider: 'clio', access_token: secrets.clio },
        booking: { provider: 'calcom', api_key: secrets.cal, event_type_id: 1 },
        voice_webhook_secret: secrets.voice,
        booking_webhook_secret: secrets.booking,
        max_concurrent_calls: 5,
        reminder_offsets_minutes: [],
        allowed_call_countries: ['US'],
      },
      created_at: now,
      updated_at: now,
    });
    const other = `old-${rand(4)}`;
    await db.collection<any>('clio_connections').insertOne({
      _id: other,
      region: 'us',
      base_url: 'https://app.clio.com',
      access_token: secrets.access,
      refresh_token: secrets.refresh,
      expires_at: new Date(Date.now() + 86_400_000),
      status: 'connected',
      connected_at: now,
      updated_at: now,
    });

    // A callback's tokens waiting for the browser's confirmation, as an older version kept them.
    await db.collection<any>('clio_oauth_confirmations').insertOne({
      _id: `confirm-${rand(8)}`,
      firm: slug,
      region: 'us',
      base_url: 'https://app.clio.com',
      browser: 'b'.repeat(64),
      holder: { id: 1, name: 'Staff', email: 'staff@old.test', account: null },
      access_token: secrets.waitingAccess,
      refresh_token: secrets.waitingRefresh,
      token_expires_at: new Date(Date.now() + 86_400_000),
      expires_at: new Date(Date.now() + 600_000),
      created_at: now,
    });

    const first = await release({ ...stack.env, SECRETS_KEY: key });
    expect(first.code, first.output).toBe(0);
    const after = await raw(stack);
    for (const secret of Object.values(secrets)) {
      expect(text(after).includes(secret), `${secret} is still stored in plaintext`).toBe(false);
    }
    // The firm works as before, with its sealed secret.
    expect((await signedDelivery(stack, slug, secrets.voice)).status).toBe(200);
    expect((await signedDelivery(stack, slug, `whsec_wrong_${rand(6)}`)).status).toBe(401);

    // The next deploy's release: every index there already, nothing left to seal.
    const second = await release({ ...stack.env, SECRETS_KEY: key });
    expect(second.code, second.output).toBe(0);
    expect(logged(second.output, 'indexes ensured').indexes).toEqual([]);
    expect(logged(second.output, 'retired indexes dropped').indexes).toEqual([]);
    expect(logged(second.output, 'stored secrets sealed with SECRETS_KEY')).toMatchObject({
      rewrapped: 0,
      sealed: {
        firms: 0,
        clio_connections: 0,
        clio_oauth_confirmations: 0,
        ringcentral_connections: 0,
        simulator_calls: 0,
        webhook_endpoints: 0,
      },
    });
    const again = await raw(stack);
    for (const name of ['firms', 'firm_keys', 'clio_connections']) {
      expect(text(again[name]), name).toBe(text(after[name]));
    }
  });
});

describe('rotating SECRETS_KEY', { timeout: 180_000 }, () => {
  it('the new key with the old one as SECRETS_KEY_PREVIOUS reads everything; release re-wraps; then the new key alone suffices and the old one alone does not', async () => {
    const [oldKey, nextKey] = [newKey(), newKey()];
    const uri = freshMongoUri();
    const before = await webWith(uri, { SECRETS_KEY: oldKey });
    const slug = `rot-${rand(4)}`;
    const secret = `whsec_rot_${rand(10)}`;
    const created = await before.admin.post('/api/firms', {
      slug,
      name: 'Rotating LLP',
      settings: { voice_webhook_secret: secret, crm: { provider: 'clio', access_token: `clio_${rand(8)}` } },
    });
    expect(created.status).toBe(200);
    expect((await signedDelivery(before, slug, secret)).status).toBe(200);
    const keysBefore = (await raw(before)).firm_keys ?? [];
    expect(keysBefore.map((k: any) => k._id)).toEqual([slug]);
    const wrappedBefore = text(keysBefore);
    await before.web.stop();

    const both = await webWith(uri, { SECRETS_KEY: nextKey, SECRETS_KEY_PREVIOUS: oldKey });
    expect((await signedDelivery(both, slug, secret)).status).toBe(200);
    // The deploy's release, as the Procfile runs it with both keys: it re-wraps the one data key,
    // and the next deploy's has nothing left to re-wrap.
    for (const expected of [1, 0]) {
      const run = await release({ ...both.env });
      expect(run.code, run.output).toBe(0);
      expect(logged(run.output, 'stored secrets sealed with SECRETS_KEY').rewrapped).toBe(expected);
    }
    const wrappedAfter = text((await raw(both)).firm_keys);
    expect(wrappedAfter).not.toBe(wrappedBefore);
    // The firm's secrets themselves were not touched: only the data key's wrapping.
    await both.web.stop();

    const nextOnly = await webWith(uri, { SECRETS_KEY: nextKey });
    expect((await signedDelivery(nextOnly, slug, secret)).status).toBe(200);
    // A PATCH under the new key, read back under it.
    const rotatedSecret = `whsec_rot2_${rand(10)}`;
    const patched = await nextOnly.admin.patch(`/api/firms/${slug}`, {
      settings: { voice_webhook_secret: rotatedSecret },
    });
    expect(patched.status).toBe(200);
    expect((await signedDelivery(nextOnly, slug, rotatedSecret)).status).toBe(200);
    // The firm's keys are read from the read cache's own document (peekFirm): the patch replaced it.
    expect((await signedDelivery(nextOnly, slug, secret)).status).toBe(401);
    await nextOnly.web.stop();

    // The old key alone opens nothing any more: a request that needs the firm's secret fails with
    // 500 (docs/operations.md#secrets-at-rest), not a 401 that would blame the sender's signature.
    const oldOnly = await webWith(uri, { SECRETS_KEY: oldKey });
    const refused = await signedDelivery(oldOnly, slug, rotatedSecret);
    expect(refused.status, JSON.stringify(refused.body)).toBe(500);
    expect(refused.body.error.code).toBe('internal_error');
  });
});

describe('no process starts without SECRETS_KEY', { timeout: 180_000 }, () => {
  it('production without it, or with a malformed one, stops with a message naming it (and never echoing it)', async () => {
    const env = {
      NODE_ENV: 'production',
      REDIS_URL: 'redis://127.0.0.1:1',
      MONGODB_URI: 'mongodb://127.0.0.1:1/never',
      ADMIN_API_KEY: `adm_${rand(16)}`,
      SESSION_SECRET: rand(24),
    };
    const missing = await release(env);
    expect(missing.code).toBe(1);
    expect(missing.output).toMatch(/SECRETS_KEY is missing/);
    const malformed = `not-a-key-${rand(6)}`;
    const bad = await release({ ...env, SECRETS_KEY: malformed });
    expect(bad.code).toBe(1);
    expect(bad.output).toMatch(/SECRETS_KEY must be 32 bytes in base64/);
    expect(bad.output).not.toContain(malformed);
  });
});
