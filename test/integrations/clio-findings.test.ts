// Clio as it really behaves, through the whole service over the spec-checked Clio
// (test/fakes/clio-server.ts): a matter's status in the document's case; a caller whose number
// a person typed into Clio as "(212) 555-0142" found (by our synced contacts, else by Clio's
// wildcard search with the number's national forms), never duplicated; and Clio refusing the
// platform's own client credentials (invalid_client), which alerts the operator and leaves every
// firm connected — only invalid_grant asks a firm to reconnect.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clioTokenSource } from '../../core/domain/crm/clio-connection.js';
import { CrmError } from '../../core/integrations/crm/clio.js';
import { readClioConnection } from '../../core/domain/crm/clio-connection-store.js';
import { createServices } from '../../core/wiring/services.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { capturingLogger } from '../helpers/capturing-logger.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { connectClio, finished, startSync } from '../contacts/clio-support.js';
import { FlowBrowser, registerClioRedirect } from './clio-oauth-browser.js';
import {
  JANE,
  callForProvider,
  storedCall,
  postSigned,
  retellCallAnalyzed,
  settledCall,
  type Caller,
} from '../webhooks/support.js';

const SECRET = 'whsec_clio_findings';
let clio: FakeClio;
let stack: Stack;

beforeAll(async () => {
  clio = await startFakeClio();
  stack = await startStack({
    workers: true,
    env: {
      CLIO_CLIENT_ID: clio.oauth.clientId,
      CLIO_CLIENT_SECRET: clio.oauth.clientSecret,
      CLIO_BASE_URL: clio.url,
    },
  });
  registerClioRedirect(clio, stack);
});
afterAll(async () => {
  await stack?.stop();
  await clio?.close();
});

const pastedFirm = () =>
  createFirm(stack, {
    voice_webhook_secret: SECRET,
    crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
  });

async function deliver(firm: { slug: string; client: any }, caller: Caller) {
  const body = retellCallAnalyzed({ caller });
  expect((await postSigned(stack, firm.slug, SECRET, body)).status).toBe(200);
  const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
  return { callId, call: await settledCall(firm.client, callId) };
}

/** A firm's Clio connection as stored, its sealed tokens opened (docs/operations.md#secrets-at-rest). */
const connections = () => ({
  findOne: ({ _id }: { _id: string }): Promise<any> => readClioConnection(stack.services.mongo.db, _id),
});
const crmRecord = async (callId: string) => (await storedCall(stack, callId))!.effects!.crm as any;

describe('a matter is created with the status the document allows', () => {
  it('sends status "pending" (the enum is lower case); Clio lists it as Pending', async () => {
    const firm = await pastedFirm();
    const email = `matter-${rand(3)}@example.com`;
    // The client is in Clio already (found by email): the matter is the only write.
    clio.contacts.push({
      id: 414_141,
      type: 'Person',
      first_name: 'Jane',
      last_name: 'Client',
      name: 'Jane Client',
      email_addresses: [{ name: 'Home', address: email, primary: true }],
      phone_numbers: [],
      updated_at: new Date().toISOString(),
    });
    const { callId, call } = await deliver(firm, { ...JANE, email });
    expect(call.effects.crm, JSON.stringify(await crmRecord(callId))).toBe('done');
    const sent = clio.writes('/api/v4/matters.json').at(-1)!;
    expect(sent.body.data.status).toBe('pending');
    const matter = clio.matters.find((m) => m.client_reference === callId)!;
    expect(matter.status).toBe('Pending');
    expect(clio.refusals).toEqual([]);
  });
});

describe('a caller typed into Clio as "(212) 555-0142"', () => {
  const caller = (tag: string): Caller => ({ ...JANE, phone: '+1 212 555 0142', email: '', last_name: tag });

  it('is found by Clio’s search with the national forms of the number, not created again', async () => {
    const firm = await pastedFirm();
    clio.contacts.push({
      id: 424_242,
      type: 'Person',
      first_name: 'Jane',
      last_name: 'Typed',
      name: 'Jane Typed',
      email_addresses: [],
      phone_numbers: [{ name: 'Work', number: '(212) 555-0142', primary: true }],
      updated_at: new Date().toISOString(),
    });
    const persons = clio.writes('/api/v4/contacts.json').length;
    const { callId, call } = await deliver(firm, caller('search'));
    expect(call.effects.crm, JSON.stringify(await crmRecord(callId))).toBe('done');
    expect((await crmRecord(callId)).result).toMatchObject({ contact_id: 424_242, contact_reused: true });
    expect(clio.writes('/api/v4/contacts.json')).toHaveLength(persons);
    expect(clio.matters.find((m) => m.client_reference === callId)?.client_id).toBe(424_242);
    clio.contacts.splice(
      clio.contacts.findIndex((c) => c.id === 424_242),
      1,
    );
  });

  it('is found among the firm’s synced contacts first (its Clio id), without searching Clio', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
    await connectClio(stack, firm);
    clio.contacts.push({
      id: 434_343,
      type: 'Person',
      first_name: 'Jane',
      last_name: 'Synced',
      name: 'Jane Synced',
      email_addresses: [],
      phone_numbers: [{ name: 'Personal', number: '212.555.0142', primary: true }],
      updated_at: new Date().toISOString(),
    });
    const synced = await finished(firm.client, await startSync(firm.client, firm.slug));
    expect(synced).toMatchObject({ status: 'completed', errors: 0 });
    const searches = () =>
      clio.requests.filter((r) => r.method === 'GET' && r.query.query !== undefined).length;
    const before = searches();
    const persons = clio.writes('/api/v4/contacts.json').length;
    const { callId, call } = await deliver(firm, caller('synced'));
    expect(call.effects.crm, JSON.stringify(await crmRecord(callId))).toBe('done');
    expect((await crmRecord(callId)).result).toMatchObject({ contact_id: 434_343, contact_reused: true });
    expect(clio.writes('/api/v4/contacts.json')).toHaveLength(persons);
    expect(searches()).toBe(before);
    clio.contacts.splice(
      clio.contacts.findIndex((c) => c.id === 434_343),
      1,
    );
  });
});

describe('Clio refuses the platform’s own client credentials (invalid_client)', () => {
  it('alerts the operator (error log, /metrics, /readyz) and leaves the firm connected', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
    await connectClio(stack, firm);
    const right = clio.oauth.clientSecret;
    clio.oauth.clientSecret = 'rotated-at-clio';
    clio.oauth.expireAccessTokens();
    const { log, lines } = capturingLogger();
    const services = createServices(stack.config, log, 'worker');
    try {
      const stale = (await connections().findOne({ _id: firm.slug })).access_token;
      const err = await clioTokenSource(services, firm.slug)
        .renew(stale)
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(CrmError);
      expect((err as CrmError).message).toMatch(/invalid_client/);
      expect((err as CrmError).message).not.toMatch(/reconnect_required/);
      expect(lines.some((l) => l.level === 50 && /invalid_client/.test(l.msg))).toBe(true);

      const settings = (await firm.client.get(`/api/firms/${firm.slug}`)).body.settings.crm;
      expect(settings).toMatchObject({ provider: 'clio', status: 'connected' });
      expect((await connections().findOne({ _id: firm.slug })).status).toBe('connected');

      const metrics = (await stack.api.get('/metrics')).text;
      expect(metrics).toMatch(/^clio_oauth_client_refused 1$/m);
      const ready = await stack.admin.get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.clio_oauth).toMatch(/invalid_client/);

      // The operator fixes the credentials: the next grant clears the alert.
      clio.oauth.clientSecret = right;
      await clioTokenSource(services, firm.slug).renew(stale);
      expect((await stack.api.get('/metrics')).text).toMatch(/^clio_oauth_client_refused 0$/m);
      expect((await stack.admin.get('/readyz')).body.clio_oauth).toBe('ok');
    } finally {
      clio.oauth.clientSecret = right;
      await services.close();
    }
  });

  it('a connect callback that meets it is 502 clio_unavailable, not a bad code, and raises the alert', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
    const browser = new FlowBrowser(`Bearer ${firm.key}`).at(new URL(stack.baseUrl).origin);
    const start = await browser.request(
      `${stack.baseUrl}/api/integrations/clio/connect?firmSlug=${firm.slug}`,
    );
    const approved = await browser.request(start.headers.get('location')!);
    const right = clio.oauth.clientSecret;
    clio.oauth.clientSecret = 'rotated-at-clio';
    try {
      const done = await browser.request(approved.headers.get('location')!, {
        headers: { accept: 'application/json' },
      });
      expect(done.status).toBe(502);
      expect(((await done.json()) as any).error.code).toBe('clio_unavailable');
      expect((await stack.api.get('/metrics')).text).toMatch(/^clio_oauth_client_refused 1$/m);
    } finally {
      clio.oauth.clientSecret = right;
    }
    await connectClio(stack, firm);
    expect((await stack.admin.get('/readyz')).body.clio_oauth).toBe('ok');
  });
});
