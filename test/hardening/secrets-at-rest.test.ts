// Firm secrets at rest (docs/operations.md#secrets-at-rest): every secret a firm's settings hold
// (the schema's write-only values: the pasted Clio token, the Cal.com key, the webhook secrets) and
// the Clio OAuth tokens are stored sealed — envelope encryption, a data key per firm wrapped with
// SECRETS_KEY — so a copy of the database shows none of them; the service still uses them; and
// disconnecting Clio (crm none, or another CRM) revokes the grant at Clio and deletes its tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EJSON } from 'bson';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { callForProvider, postSigned, retellCallAnalyzed, settledCall } from '../webhooks/support.js';
import { connectClioInBrowser, registerClioRedirect } from '../integrations/clio-oauth-browser.js';
import { calBooking, calEvent, postSigned as postCalSigned, uid } from '../bookings/support.js';

const CLIENT_ID = 'clio-client-id';
const CLIENT_SECRET = 'clio-client-secret';
const CAL_KEY = `cal_live_${rand(12)}`;
const EVENT_TYPE = 77;
const DAY = 86_400_000;
const ATTENDEE = { name: 'Jane Roe', email: 'jane.roe@example.com', timeZone: 'UTC' };

let clio: FakeClio;
let cal: FakeCalcom;
let stack: Stack;
const slots = dailySlots(Date.now(), 5, 3);

beforeAll(async () => {
  clio = await startFakeClio(`clio_pasted_${rand(12)}`);
  clio.oauth.clientId = CLIENT_ID;
  clio.oauth.clientSecret = CLIENT_SECRET;
  cal = await startFakeCalcom({ apiKey: CAL_KEY, eventTypeId: EVENT_TYPE, slots });
  stack = await startStack({
    workers: true,
    env: { CLIO_CLIENT_ID: CLIENT_ID, CLIO_CLIENT_SECRET: CLIENT_SECRET, CLIO_BASE_URL: clio.url },
  });
  registerClioRedirect(clio, stack);
});
afterAll(async () => {
  await stack?.stop();
  await Promise.all([clio?.close(), cal?.stop()]);
});

/** Connect link → Clio's approval → the callback → Connect, as the firm's browser goes through them. */
const connectClio = (firm: { slug: string; key: string }) => connectClioInBrowser(stack.baseUrl, firm);

/** Every document of every collection of the stack's database, as extended JSON text. */
async function wholeDatabase(): Promise<string> {
  const db = stack.services.mongo.db;
  const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
  const parts: string[] = [];
  for (const name of names.sort()) {
    const docs = await db.collection(name).find({}).toArray();
    parts.push(`${name}: ${EJSON.stringify(docs, { relaxed: true })}`);
  }
  return parts.join('\n');
}

/** The access and refresh tokens the local Clio has issued (its live ones and every one refreshed away). */
const issuedClioTokens = (): string[] => [...clio.oauth.accessTokens.keys(), ...clio.oauth.refreshTokens];

describe('secrets at rest', () => {
  const secrets = {
    voice: `whsec_voice_${rand(10)}`,
    booking: `whsec_cal_${rand(10)}`,
  };
  let pasted: Awaited<ReturnType<typeof createFirm>>;
  let oauth: Awaited<ReturnType<typeof createFirm>>;

  beforeAll(async () => {
    pasted = await createFirm(stack, {
      voice_webhook_secret: secrets.voice,
      booking_webhook_secret: secrets.booking,
      crm: { provider: 'clio', access_token: clio.token },
      booking: { provider: 'calcom', api_key: CAL_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
    });
    oauth = await createFirm(stack, { voice_webhook_secret: secrets.voice });
    await connectClio(oauth);
  });

  it('no secret of a firm, nor a Clio OAuth token, is anywhere in the raw MongoDB documents', async () => {
    // Use every secret once, so whatever the service keeps of its use is in the database too.
    const body = retellCallAnalyzed({ providerCallId: `call_${rand(8)}` });
    expect((await postSigned(stack, pasted.slug, secrets.voice, body)).status).toBe(200);
    const call = await callForProvider(stack, pasted.slug, body.call.call_id);
    await settledCall(pasted.client, call._id);
    const oauthBody = retellCallAnalyzed({ providerCallId: `call_${rand(8)}` });
    expect((await postSigned(stack, oauth.slug, secrets.voice, oauthBody)).status).toBe(200);
    await settledCall(oauth.client, (await callForProvider(stack, oauth.slug, oauthBody.call.call_id))._id);
    const booking = calEvent('BOOKING_CREATED', calBooking(uid(), slots[0]!, [ATTENDEE]));
    expect((await postCalSigned(stack, pasted.slug, booking, secrets.booking)).status).toBeLessThan(300);

    const tokens = issuedClioTokens();
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    const everything = await wholeDatabase();
    expect(everything).toContain(pasted.slug); // the dump is real
    for (const secret of [secrets.voice, secrets.booking, clio.token, CAL_KEY, ...tokens]) {
      expect(everything.includes(secret), `${secret.slice(0, 12)}… is stored in plaintext`).toBe(false);
    }
  });

  it('the service still uses them: signed webhooks, Clio with a pasted token and with OAuth, Cal.com', async () => {
    // A delivery signed with the firm's secret is taken; one signed with another is not.
    const forged = retellCallAnalyzed({ providerCallId: `call_${rand(8)}` });
    expect((await postSigned(stack, pasted.slug, `whsec_other_${rand(6)}`, forged)).status).toBe(401);
    const calForged = calEvent('BOOKING_CREATED', calBooking(uid(), slots[1]!, [ATTENDEE]));
    expect((await postCalSigned(stack, pasted.slug, calForged, `other_${rand(8)}`)).status).toBe(401);

    // The crm effect reaches Clio with the pasted token, and with the OAuth connection's token.
    for (const firm of [pasted, oauth]) {
      const body = retellCallAnalyzed({ providerCallId: `call_${rand(8)}` });
      expect((await postSigned(stack, firm.slug, secrets.voice, body)).status).toBe(200);
      const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
      const settled = await settledCall(firm.client, callId);
      expect(settled.effects.crm, firm.slug).toBe('done');
    }
    const bearers = new Set(
      clio.requests.filter((r) => r.path.startsWith('/api/v4/')).map((r) => r.authorization),
    );
    expect(bearers).toContain(`Bearer ${clio.token}`);
    expect([...bearers].some((b) => b !== `Bearer ${clio.token}` && /^Bearer access_/.test(b ?? ''))).toBe(
      true,
    );

    // Cal.com's availability with the firm's key.
    const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const res = await pasted.client.get(
      `/api/appointments/availability?${new URLSearchParams({
        firmSlug: pasted.slug,
        start: iso(slots[0]!),
        end: iso(slots[0]! + 4 * DAY),
        timeZone: 'UTC',
      })}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(JSON.stringify(res.body)).toContain(new Date(slots[0]!).toISOString().slice(0, 16));
  });
});

describe('disconnecting Clio', () => {
  const connection = (slug: string) =>
    stack.services.mongo.db.collection<any>(COLLECTIONS.clioConnections).findOne({ _id: slug });
  /** The firm's live Clio access token, as the local Clio knows it (the only one it issued since `before`). */
  const liveTokensSince = (before: Set<string>) =>
    [...clio.oauth.accessTokens.keys()].filter((t) => !before.has(t));

  it.each([
    ['crm none', { provider: 'none' }],
    ['crm null (the default, none)', null],
    ['a pasted token instead', { provider: 'clio', access_token: 'clio-test-token' }],
  ])('%s: the grant is revoked at Clio and its tokens are deleted', async (_name, crm) => {
    const firm = await createFirm(stack);
    const before = new Set(clio.oauth.accessTokens.keys());
    const refreshBefore = new Set(clio.oauth.refreshTokens);
    await connectClio(firm);
    expect(await connection(firm.slug)).not.toBeNull();
    const [access] = liveTokensSince(before);
    const refresh = [...clio.oauth.refreshTokens].filter((t) => !refreshBefore.has(t));
    expect(access).toBeDefined();

    const res = await firm.client.patch(`/api/firms/${firm.slug}`, { settings: { crm } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);

    const revoke = clio.requests.filter((r) => r.path === '/oauth/deauthorize');
    expect(revoke.map((r) => r.authorization)).toContain(`Bearer ${access}`);
    // Clio no longer takes the token, nor its refresh token; we keep neither.
    expect(clio.oauth.accessTokens.has(access!)).toBe(false);
    for (const token of refresh) expect(clio.oauth.refreshTokens.has(token)).toBe(false);
    expect(await connection(firm.slug)).toBeNull();
    const api = await fetch(`${clio.url}/api/v4/contacts.json`, {
      headers: { authorization: `Bearer ${access}` },
    });
    expect(api.status).toBe(401);
  });

  it('a firm whose Clio cannot be reached still disconnects: the tokens are deleted', async () => {
    const firm = await createFirm(stack);
    await connectClio(firm);
    clio.failNext.push({ status: 503, path: '/oauth/deauthorize' });
    const res = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { crm: { provider: 'none' } },
    });
    expect(res.status).toBe(200);
    await eventually(async () => expect(await connection(firm.slug)).toBeNull());
  });
});
