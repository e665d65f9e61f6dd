// RingCentral as a firm's phone system (docs/ringcentral.md) against the spec-checked RingCentral
// (test/fakes/ringcentral-server.ts: every request judged by RingCentral's own OpenAPI document):
// the OAuth connection with PKCE, bound to the browser; the contacts sync (FSync over two pages with
// a 429 and an expired token, counted as an import of the same rows; then ISync with changes and
// deletions); the webhook subscription made after the Validation-Token handshake (its renewal:
// ringcentral-subscription.test.ts); missed calls called back by the firm's agent through every
// rule a direct call obeys, and forged deliveries refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clock } from '../../core/platform/clock.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { JOBS } from '../../jobs/table.js';
import { CAPPED, CAPPED_ATTEMPTS } from '../../jobs/backoff.js';
import { ringCentralContactRow } from '../../core/domain/contacts/ringcentral-contact-row.js';
import type { Workers } from '../../workers/runner.js';
import { missedCallEvent, startFakeRingCentral, type FakeRingCentral } from '../fakes/ringcentral-server.js';
import { loadSpec } from '../fakes/spec/openapi-spec.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { connectRingCentral, startRingCentralStack } from './ringcentral-support.js';
import { createAgent, simulatorCallsOf } from '../calls/support.js';
import { contactsOf, expectNoTwins, importRows } from '../contacts/support.js';

let rc: FakeRingCentral;
let stack: Stack;
let workers: Workers | undefined;

beforeAll(async () => {
  rc = await startFakeRingCentral();
  stack = await startRingCentralStack(rc);
  workers = startInProcessWorkers(stack);
});
afterAll(async () => {
  await workers?.stop();
  await stack?.stop();
  await rc?.close();
});

const db = () => stack.services.mongo.db;
const SYNC_PATH = '/restapi/v1.0/account/~/extension/~/address-book-sync';

async function waitSync(client: Stack['admin'], jobId: string) {
  return eventually(
    async () => {
      const res = await client.get(`/api/contacts/sync/${jobId}`);
      expect(res.status).toBe(200);
      expect(res.body.status).not.toBe('running');
      return res.body;
    },
    60_000,
    50,
  );
}

describe('the fake judges requests by RingCentral’s document', () => {
  it('refuses what the document does not have, in RingCentral’s error shape', async () => {
    const spec = loadSpec('ringcentral');
    expect(spec.match('get', SYNC_PATH.replace(/~/g, '123'))?.operationId).toBe('syncAddressBook');
    const verdict = spec.checkRequest({
      method: 'get',
      path: SYNC_PATH,
      query: new URLSearchParams('syncType=Full&per_page=9'),
    });
    expect(verdict.problems).toEqual([
      'query parameter "per_page" is not in the document',
      'query parameter "syncType" must be one of ["FSync","ISync"]',
    ]);
    const match = spec.match('post', '/restapi/oauth/token')!;
    expect(spec.checkForm(match, new URLSearchParams('grant_type=magic&client_secret=x'))).toEqual([
      expect.stringMatching(/grant_type.*must be one of/),
      'form field "client_secret" is not in the document',
    ]);
    const res = await fetch(`${rc.url}${SYNC_PATH}?syncType=FSync&perPage=10&page=2`, {
      headers: { authorization: 'Bearer nobody' },
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ errorCode: 'TokenInvalid' });
  });
});

describe('connecting RingCentral', () => {
  it('PKCE and a state bound to the browser; tokens sealed; the subscription made after the handshake', async () => {
    const firm = await createFirm(stack);
    const subsBefore = rc.subscriptions.size;
    const flow = await connectRingCentral(stack, firm);
    const url = new URL(flow.authorize);
    expect(url.origin + url.pathname).toBe(`${rc.url}/restapi/oauth/authorize`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get('redirect_uri')).toBe(
      `${stack.baseUrl}/api/integrations/ringcentral/callback`,
    );
    expect(flow.back.status, flow.html).toBe(200);
    expect(flow.html).toContain('is connected to RingCentral');
    // The code was exchanged with the verifier whose S256 the authorize URL carried.
    const exchange = rc.oauth.tokenRequests.at(-1)!;
    expect(exchange).toMatchObject({ grant_type: 'authorization_code', code_verifier: expect.any(String) });
    // The tokens are sealed at rest: no token in the stored document.
    const raw = JSON.stringify(
      await db().collection<any>(COLLECTIONS.ringcentralConnections).findOne({ _id: firm.slug }),
    );
    for (const token of rc.oauth.accessTokens.keys()) expect(raw).not.toContain(token);
    const status = await firm.client.get(`/api/integrations/ringcentral/status?firmSlug=${firm.slug}`);
    expect(status.body).toMatchObject({
      connected: true,
      status: 'connected',
      subscription_expires_at: expect.any(String),
    });
    expect(JSON.stringify(status.body)).not.toMatch(/token/i);
    // The subscription: our webhook address, the telephony sessions filter, made after RingCentral's handshake.
    expect(rc.subscriptions.size).toBe(subsBefore + 1);
    const sub = [...rc.subscriptions.values()].at(-1)!;
    expect(sub.address).toBe(`${stack.baseUrl}/api/v2/${firm.slug}/phone-webhook`);
    expect(sub.eventFilters).toEqual(['/restapi/v1.0/account/~/extension/~/telephony/sessions']);

    // The same callback again: the state is used up.
    const again = await fetch(flow.callback, {
      headers: { cookie: flow.cookie, accept: 'application/json' },
    });
    expect(again.status).toBe(400);
    // A flow finished in another browser: 403, and the code is never exchanged.
    const before = rc.oauth.tokenRequests.length;
    const start = await firm.client.post('/api/integrations/ringcentral/connect', { firmSlug: firm.slug });
    const authorize = start.body.authorize_url as string;
    const approved = await fetch(authorize, { redirect: 'manual' });
    const stranger = await fetch(approved.headers.get('location')!, {
      headers: { accept: 'application/json' },
    });
    expect(stranger.status).toBe(403);
    expect(rc.oauth.tokenRequests.length).toBe(before);
  });

  it('invalid_client alerts the operator only: 502 at the callback, the gauge set until a grant succeeds', async () => {
    const firm = await createFirm(stack);
    rc.oauth.refuseClient = true;
    const refused = await connectRingCentral(stack, firm);
    rc.oauth.refuseClient = false;
    expect(refused.back.status).toBe(502);
    expect(refused.html).toContain('ringcentral_unavailable');
    expect((await stack.api.get('/metrics')).text).toMatch(/^ringcentral_oauth_client_refused 1$/m);
    const status = await firm.client.get(`/api/integrations/ringcentral/status?firmSlug=${firm.slug}`);
    expect(status.body.status).toBe('not_connected');
    expect((await connectRingCentral(stack, firm)).back.status).toBe(200);
    expect((await stack.api.get('/metrics')).text).toMatch(/^ringcentral_oauth_client_refused 0$/m);
  });

  it('answers bad requests in the error shape', async () => {
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    expectError(await firm.client.post('/api/integrations/ringcentral/connect', {}), 400, 'invalid_request');
    expectError(
      await firm.client.post('/api/integrations/ringcentral/connect', { firmSlug: { $ne: null } }),
      400,
      'invalid_request',
    );
    expectError(
      await firm.client.post('/api/integrations/ringcentral/connect', { firmSlug: firm.slug, extra: 1 }),
      400,
      'invalid_request',
    );
    expectError(
      await firm.client.post('/api/integrations/ringcentral/connect', { firmSlug: other.slug }),
      403,
      'forbidden',
    );
    expectError(
      await stack.api.get('/api/integrations/ringcentral/callback?code=x&state=nope'),
      400,
      'invalid_request',
    );
    expectError(
      await stack.api.get('/api/integrations/ringcentral/callback?state=nope'),
      400,
      'invalid_request',
    );
    // The agent that calls back must be the firm's own; the setting's fields are checked.
    const othersAgent = await createAgent(other.client, other.slug);
    const setting = (value: unknown) =>
      firm.client.patch(`/api/firms/${firm.slug}`, { settings: { missed_call_callback: value } });
    expect(
      expectError(await setting({ enabled: true, agent_id: othersAgent }), 400, 'invalid_request').map(
        (d) => d.path,
      ),
    ).toEqual(['/settings/missed_call_callback/agent_id']);
    expectError(
      await setting({ enabled: true, agent_id: othersAgent, delay_seconds: -1 }),
      400,
      'invalid_request',
    );
    expectError(await setting({ enabled: 'yes', agent_id: othersAgent }), 400, 'invalid_request');
    expectError(await setting({ enabled: true }), 400, 'invalid_request');
    expectError(await setting({ enabled: true, agent_id: othersAgent, typo: 1 }), 400, 'invalid_request');
    const res = await firm.client.post('/api/contacts/sync', { firmSlug: firm.slug, source: 'ringcentral' });
    expectError(res, 409, 'phone_system_not_connected');
    expectError(
      await firm.client.post('/api/contacts/sync', {
        firmSlug: firm.slug,
        source: 'ringcentral',
        extra: true,
      }),
      400,
      'invalid_request',
    );
  });
});

describe('the contacts sync', () => {
  it('FSync of 300 in 2 pages (a 429, an expired token) counts as an import; ISync applies changes and deletions', async () => {
    const firm = await createFirm(stack);
    await connectRingCentral(stack, firm);
    const base = 70_000_000 + rc.contacts.size * 10;
    const pad = (n: number) => String(n).padStart(4, '0');
    for (let i = 0; i < 300; i++) {
      rc.addContact({
        id: base + i,
        firstName: `First${i}`,
        lastName: `Last${i}`,
        // Every 50th: the email of the one before (a duplicate); every 50th + 13: an invalid phone (an error).
        email: i % 50 === 7 ? `rcp${base + i - 1}@example.com` : `rcp${base + i}@example.com`,
        ...(i % 50 === 13 ? { mobilePhone: '12345' } : { businessPhone: `+1312555${pad(i)}` }),
      });
    }
    const mine = () => [...rc.contacts.values()].filter((c) => c.id >= base && c.id < base + 1000);
    rc.failNext.push({ status: 429, path: SYNC_PATH, retryAfter: '1' });
    const refreshes = rc.oauth.refreshCount();
    const requestsBefore = rc.requests.length;
    rc.oauth.expireAccessTokens();
    const start = await firm.client.post('/api/contacts/sync', {
      firmSlug: firm.slug,
      source: 'ringcentral',
    });
    expect(start.status, JSON.stringify(start.body)).toBe(202);
    const first = await waitSync(firm.client, start.body.job_id);
    const rows = mine().flatMap((c) => ringCentralContactRow(c) ?? []);
    const control = await createFirm(stack);
    const imported = await importRows(control.client, control.slug, rows);
    expect(imported).toMatchObject({ imported: 288, duplicates: 6, errors: 6 });
    expect(first).toEqual({
      job_id: start.body.job_id,
      status: 'completed',
      pages: 2,
      imported: imported.imported,
      duplicates: imported.duplicates,
      errors: imported.errors,
      deleted: 0,
      updated: 0,
    });
    // The expired token was answered 401 and refreshed (other firms' checks may refresh theirs too).
    expect(rc.oauth.refreshCount()).toBeGreaterThan(refreshes);
    const fsync = rc.requests
      .slice(requestsBefore)
      .filter((r) => r.path === SYNC_PATH && r.query.syncType === 'FSync');
    expect(fsync.map((r) => r.query.pageId ?? '1')).toContain('2');
    expect(fsync.every((r) => r.query.perPage === '250')).toBe(true);
    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts).toHaveLength(288);
    expect(contacts.every((c) => c.source === 'ringcentral')).toBe(true);
    console.log(
      `ringcentral FSync: ${JSON.stringify(first)}; import of the same ${rows.length} rows ${JSON.stringify(imported)}; ` +
        `address-book-sync requests ${fsync.length} (2 pages, one 429, one 401 on an expired token); refreshes ${rc.oauth.refreshCount() - refreshes}`,
    );

    // ISync from the stored token: 4 changed names, 3 removed, 2 new.
    const stored = mine().filter((c) => contacts.some((s) => s.external_id === String(c.id)));
    for (const c of stored.slice(10, 14)) rc.updateContact(c.id, { lastName: `Renamed${c.id}` });
    for (const c of stored.slice(20, 23)) rc.deleteContact(c.id);
    rc.addContact({ id: base + 900, firstName: 'New', lastName: 'One', email: `new${base}@example.com` });
    rc.addContact({ id: base + 901, firstName: 'New', lastName: 'Two', mobilePhone: '+13125559901' });
    const before = rc.requests.length;
    const next = await firm.client.post('/api/contacts/sync', { firmSlug: firm.slug, source: 'ringcentral' });
    const second = await waitSync(firm.client, next.body.job_id);
    expect(second).toMatchObject({
      status: 'completed',
      pages: 1,
      imported: 2,
      duplicates: 0,
      errors: 0,
      deleted: 3,
      updated: 4,
    });
    const asked = rc.requests.slice(before).filter((r) => r.path === SYNC_PATH);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.query).toMatchObject({ syncType: 'ISync', syncToken: expect.stringMatching(/^st\./) });
    const removed = await contactsOf(stack)
      .find({ firm: firm.slug, deleted_at: { $ne: null } })
      .toArray();
    expect(removed.map((c) => c.external_id).sort()).toEqual(
      stored
        .slice(20, 23)
        .map((c) => String(c.id))
        .sort(),
    );
    const renamed = await contactsOf(stack).findOne({ firm: firm.slug, external_id: String(stored[10]!.id) });
    expect(renamed?.last_name).toBe(`Renamed${stored[10]!.id}`);
    const listed = await firm.client.get(`/api/contacts?firmSlug=${firm.slug}&limit=1000`);
    expect(listed.body.contacts.filter((c: any) => c.deleted_at !== undefined)).toHaveLength(3);
    console.log(`ringcentral ISync: ${JSON.stringify(second)}`);
  });

  it('a refresh RingCentral refuses marks the connection reconnect_required', async () => {
    const firm = await createFirm(stack);
    await connectRingCentral(stack, firm);
    rc.oauth.revokeRefreshTokens();
    rc.oauth.expireAccessTokens();
    const start = await firm.client.post('/api/contacts/sync', {
      firmSlug: firm.slug,
      source: 'ringcentral',
    });
    const result = await waitSync(firm.client, start.body.job_id);
    expect(result).toMatchObject({ status: 'failed', message: expect.stringMatching(/reconnect_required/) });
    const status = await firm.client.get(`/api/integrations/ringcentral/status?firmSlug=${firm.slug}`);
    expect(status.body).toMatchObject({ connected: false, status: 'reconnect_required' });
    expectError(
      await firm.client.post('/api/contacts/sync', { firmSlug: firm.slug, source: 'ringcentral' }),
      409,
      'phone_system_not_connected',
    );
  });
});

describe('missed calls called back', () => {
  it('8 missed calls from 6 callers: one callback per caller, none to a DNC number, a caller who called in or a known client; forged deliveries refused', async () => {
    const firm = await createFirm(stack, { timezone: 'UTC', max_concurrent_calls: 20 });
    const agentId = await createAgent(firm.client, firm.slug);
    const patched = await stack.admin.patch(`/api/firms/${firm.slug}`, {
      settings: {
        missed_call_callback: {
          enabled: true,
          agent_id: agentId,
          delay_seconds: 1,
          exclude_known_clients: true,
        },
      },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    await connectRingCentral(stack, firm);
    const sub = [...rc.subscriptions.values()].find((s) => s.address.includes(`/${firm.slug}/`))!;
    const only = (s: { id: string }) => s.id === sub.id;
    const firmNumber = '+13125550000';
    const callers = [
      '+13125551001',
      '+13125551002',
      '+13125551003',
      '+13125551004',
      '+13125551005',
      '+13125551006',
    ];
    // 1004 is on the do-not-call list; 1005 calls in again and is answered; 1006 is a known client.
    expect(
      (await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [callers[3]] })).status,
    ).toBe(200);
    // A known client: a contact stored as the RingCentral sync stores one.
    const known = ringCentralContactRow({
      id: 88_000_001,
      firstName: 'Known',
      lastName: 'Client',
      businessPhone: callers[5],
    })!;
    expect(await importRows(firm.client, firm.slug, [known])).toMatchObject({ imported: 1 });

    // Forged: no token, a wrong token, an unknown firm; nothing is recorded.
    const forged = missedCallEvent(sub, { from: callers[0]!, to: firmNumber });
    const post = (path: string, headers: Record<string, string>) =>
      fetch(`${stack.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(forged),
      });
    const hook = `/api/v2/${firm.slug}/phone-webhook`;
    expect((await post(hook, {})).status).toBe(401);
    expect((await post(hook, { 'verification-token': 'guess' })).status).toBe(401);
    expect((await post(hook, { 'verification-token': `${sub.verificationToken}x` })).status).toBe(401);
    expect(
      (await post('/api/v2/no-such-firm/phone-webhook', { 'verification-token': sub.verificationToken! }))
        .status,
    ).toBe(401);
    expect(await post(hook, { 'validation-token': 'v' }).then((r) => r.headers.get('validation-token'))).toBe(
      'v',
    );
    // The handshake is answered alike whether the firm exists or not: it cannot list firms.
    const unknownHandshake = await post('/api/v2/no-such-firm/phone-webhook', { 'validation-token': 'v' });
    expect([unknownHandshake.status, unknownHandshake.headers.get('validation-token')]).toEqual([200, 'v']);
    expect(
      await db()
        .collection(COLLECTIONS.firms)
        .countDocuments({ _id: 'no-such-firm' as never }),
    ).toBe(0);
    // A delivery that carries both headers gets the Validation-Token back too (and is a delivery).
    const both = await fetch(`${stack.baseUrl}${hook}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'validation-token': 'w',
        'verification-token': sub.verificationToken!,
      },
      body: '{}',
    });
    expect([both.status, both.headers.get('validation-token')]).toEqual([200, 'w']);
    expect((await post(hook, { 'validation-token': 'w', 'verification-token': 'guess' })).status).toBe(401);
    // Malformed bodies with the right token: the error shape, nothing recorded.
    const token = { 'verification-token': sub.verificationToken! };
    const raw = (body: string, type = 'application/json') =>
      fetch(`${stack.baseUrl}${hook}`, { method: 'POST', headers: { 'content-type': type, ...token }, body });
    const bad = await raw('[1]');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.code).toBe('invalid_request');
    expect((await raw('{"body": "x"}')).status).toBe(400);
    expect((await raw('{not json')).status).toBe(400);
    expect((await raw('hello', 'text/plain')).status).toBe(415);
    expect(await db().collection(COLLECTIONS.missedCalls).countDocuments({ firm: firm.slug })).toBe(0);

    // Eight missed calls: 1001 three times (one session sent twice), the others once; 1005 then answered.
    const sessions: string[] = [];
    const send = async (from: string, status?: 'Answered' | 'VoiceMail', sessionId?: string, at?: Date) => {
      const event = (x: { id: string }) =>
        missedCallEvent(x, {
          from,
          to: firmNumber,
          ...(status ? { status } : {}),
          ...(sessionId ? { sessionId } : {}),
          ...(at ? { at } : {}),
        });
      const statuses = await rc.deliver((x) => (only(x) ? event(x) : { event: 'ignored' }), undefined);
      expect(statuses.every((x) => x === 200)).toBe(true);
    };
    // 1005 called in and was answered after its missed call; RingCentral's events may arrive in any
    // order: the answered one is delivered first, the missed call (5 s earlier) after it.
    await send(callers[4]!, 'Answered');
    const sent = Date.now();
    for (const [i, caller] of [
      callers[0],
      callers[0],
      callers[1],
      callers[2],
      callers[3],
      callers[4],
      callers[5],
      callers[0],
    ].entries()) {
      const sessionId = `s-${firm.slug}-${i}`;
      sessions.push(sessionId);
      await send(
        caller!,
        i === 2 ? 'VoiceMail' : undefined,
        sessionId,
        caller === callers[4] ? new Date(Date.now() - 5000) : undefined,
      );
    }
    await send(callers[0]!, undefined, sessions[0]); // the same session again: not a second missed call
    const missed = await eventually(
      async () => {
        const docs = await db().collection<any>(COLLECTIONS.missedCalls).find({ firm: firm.slug }).toArray();
        expect(docs).toHaveLength(8);
        expect(docs.every((d) => d.outcome !== 'pending')).toBe(true);
        return docs;
      },
      20_000,
      50,
    );
    const byCaller = (n: number) =>
      missed
        .filter((d) => d.caller === callers[n])
        .map((d) => d.outcome)
        .sort();
    expect(byCaller(0)).toEqual(['called', 'skipped_recent_callback', 'skipped_recent_callback']);
    expect(byCaller(1)).toEqual(['called']);
    expect(byCaller(2)).toEqual(['called']);
    expect(byCaller(3)).toEqual(['blocked']);
    expect(byCaller(4)).toEqual(['skipped_called_in']);
    expect(byCaller(5)).toEqual(['skipped_known_client']);

    // The callbacks: registered like create-outbound-call's, saying they are callbacks, linking the missed call, dialled once each.
    const called = missed.filter((d) => d.outcome === 'called');
    for (const m of called) {
      const call = await firm.client.get(`/api/v2/get-call/${m.callback_call_id}`);
      expect(call.body).toMatchObject({
        to_number: m.caller,
        agent_id: agentId,
        direction: 'outbound',
        dynamic_variables: { callback: 'true', call_reason: 'missed_call_callback', missed_call_id: m._id },
      });
      await eventually(async () =>
        expect(await simulatorCallsOf(stack).countDocuments({ 'metadata.call_id': m.callback_call_id })).toBe(
          1,
        ),
      );
    }
    const latency = called.map((m) => m.decided_at.getTime() - sent);
    console.log(
      `missed calls: 8 from 6 callers → ${called.length} callbacks; outcomes ${JSON.stringify(missed.map((d) => d.outcome).sort())}; ` +
        `callback registered ${Math.min(...latency)}–${Math.max(...latency)} ms after the first delivery (delay 1 s)`,
    );
    expect(await simulatorCallsOf(stack).countDocuments({ to_number: callers[3] })).toBe(0);
  });

  it('a caller outside the firm’s calling hours is called back when allowed (scheduled)', async () => {
    const today = ((new Date().getUTCDay() + 6) % 7) + 1;
    const firm = await createFirm(stack, {
      timezone: 'UTC',
      calling_window: { start: '09:00', end: '17:00', days: [(today % 7) + 1] },
    });
    const agentId = await createAgent(firm.client, firm.slug);
    await stack.admin.patch(`/api/firms/${firm.slug}`, {
      settings: { missed_call_callback: { enabled: true, agent_id: agentId, delay_seconds: 0 } },
    });
    await connectRingCentral(stack, firm);
    const sub = [...rc.subscriptions.values()].find((s) => s.address.includes(`/${firm.slug}/`))!;
    await rc.deliver((s) =>
      s.id === sub.id
        ? missedCallEvent(s, { from: '+13125552001', to: '+13125550000' })
        : { event: 'ignored' },
    );
    const doc = await eventually(async () => {
      const d = await db().collection<any>(COLLECTIONS.missedCalls).findOne({ firm: firm.slug });
      expect(d?.outcome).toBe('scheduled');
      return d;
    });
    const call = await firm.client.get(`/api/v2/get-call/${doc.callback_call_id}`);
    expect(call.body).toMatchObject({ to_number: '+13125552001', dynamic_variables: { callback: 'true' } });
    expect(await simulatorCallsOf(stack).countDocuments({ 'metadata.call_id': doc.callback_call_id })).toBe(
      0,
    );
    // The callback job's failures are the service's own: it outlasts an outage of about an hour
    // (retried at most 5 s apart), not given up after 8 attempts with the missed call `pending`.
    const job = await stack.services.queues[JOBS.missedCallback.queue].getJob(
      JOBS.missedCallback.id!({ firm: firm.slug, missedCallId: doc._id }),
    );
    expect(job?.opts).toMatchObject({ attempts: CAPPED_ATTEMPTS, backoff: { type: CAPPED } });
  });
});

describe('one callback per caller per 4 hours', () => {
  it('holds across the edge of a 4-hour window, and calls back again after 4 hours', async () => {
    const firm = await createFirm(stack, { timezone: 'UTC' });
    const agentId = await createAgent(firm.client, firm.slug);
    await stack.admin.patch(`/api/firms/${firm.slug}`, {
      settings: { missed_call_callback: { enabled: true, agent_id: agentId, delay_seconds: 0 } },
    });
    await connectRingCentral(stack, firm);
    const sub = [...rc.subscriptions.values()].find((x) => x.address.includes(`/${firm.slug}/`))!;
    const caller = '+13125553001';
    const FOUR_HOURS = 4 * 3600_000;
    const outcome = async (n: number) => {
      await rc.deliver((x) =>
        x.id === sub.id
          ? missedCallEvent(x, { from: caller, to: '+13125550000', sessionId: `edge-${firm.slug}-${n}` })
          : { event: 'ignored' },
      );
      return eventually(async () => {
        const d = await db()
          .collection<any>(COLLECTIONS.missedCalls)
          .findOne({ _id: `${firm.slug}|edge-${firm.slug}-${n}` });
        expect(d?.outcome).not.toBe('pending');
        expect(d?.outcome).toBeDefined();
        return d.outcome as string;
      });
    };
    // 30 s before a window's end, then 30 s after it: the second falls in the next window.
    const edge = (Math.floor(Date.now() / FOUR_HOURS) + 1) * FOUR_HOURS;
    try {
      clock.set(edge - 30_000);
      expect(await outcome(1)).toBe('called');
      clock.set(edge + 30_000);
      expect(await outcome(2)).toBe('skipped_recent_callback');
      clock.set(edge + FOUR_HOURS);
      expect(await outcome(3)).toBe('called');
    } finally {
      clock.reset();
    }
  });
});
