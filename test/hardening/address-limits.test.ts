// Limits kept per client address (docs/authentication.md#rate-limits): an address blocked for its
// bad attempts was refused even with a valid key; the widget challenge, widget sessions from a
// wrong origin and the Clio callback were never limited (700 of 700 served); and every IPv6
// address was a bucket of its own, though one host may use any address of its /64.
// Behind TRUST_PROXY the client address is the X-Forwarded-For entry, so each test plays several.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { askSession, createWidgetKey } from '../widget/widget-key-helpers.js';
import { createAgent } from '../chat/chat-helpers.js';

const BAD_ATTEMPTS = 5;
const OPEN_LIMIT = 6;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    env: {
      TRUST_PROXY: 'true',
      UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: String(BAD_ATTEMPTS),
      OPEN_ROUTE_RATE_LIMIT_PER_MINUTE: String(OPEN_LIMIT),
      WIDGET_SESSIONS_PER_ADDRESS_PER_HOUR: '1000',
    },
  });
});
afterAll(async () => stack?.stop());

let hosts = 0;
/** A fresh IPv4 client address (TEST-NET-3). */
const nextAddress = () => `203.0.113.${++hosts}`;
const from = (address: string) => ({ 'X-Forwarded-For': address });

describe('a valid key is never refused by the unauthenticated limiter', () => {
  it('an address blocked for bad tokens still gets 200 with the firm’s valid key; bad tokens stay 429', async () => {
    const firm = await createFirm(stack);
    const address = nextAddress();
    const bad = stack.api.withToken('isk_not-a-real-key');
    for (let i = 0; i < BAD_ATTEMPTS; i++) {
      expectError(await bad.get(`/api/firms/${firm.slug}`, from(address)), 401, 'unauthorized');
    }
    expectError(await bad.get(`/api/firms/${firm.slug}`, from(address)), 429, 'rate_limited');
    // No credential at all: refused at once.
    expectError(await stack.api.get(`/api/firms/${firm.slug}`, from(address)), 429, 'rate_limited');
    for (let i = 0; i < 3; i++) {
      expect((await firm.client.get(`/api/firms/${firm.slug}`, from(address))).status).toBe(200);
    }
    const refused = await bad.get(`/api/firms/${firm.slug}`, from(address));
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('the routes that take no token are limited per address', () => {
  it('the widget challenge: past the limit 429 with Retry-After; another address is served', async () => {
    const firm = await createFirm(stack);
    const key = await createWidgetKey(firm.client, firm.slug, { challenge: 'altcha' });
    const address = nextAddress();
    const ask = (at: string) =>
      stack.api.get(`/api/widget/challenge?key=${key.key}`, { Origin: 'https://firm.example', ...from(at) });
    const answers = [];
    for (let i = 0; i < OPEN_LIMIT * 3; i++) answers.push((await ask(address)).status);
    expect(answers.filter((s) => s === 200)).toHaveLength(OPEN_LIMIT);
    const refused = await ask(address);
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await ask(nextAddress())).status).toBe(200);
  });

  it('widget sessions from a wrong origin: 403 up to the limit, then 429', async () => {
    const firm = await createFirm(stack);
    const key = await createWidgetKey(firm.client, firm.slug);
    const address = nextAddress();
    const answers = [];
    for (let i = 0; i < OPEN_LIMIT * 3; i++) {
      answers.push(
        (await askSession(stack.api, 'https://elsewhere.example', { key: key.key }, from(address))).status,
      );
    }
    expect(answers.slice(0, OPEN_LIMIT)).toEqual(Array(OPEN_LIMIT).fill(403));
    expect(new Set(answers.slice(OPEN_LIMIT))).toEqual(new Set([429]));
    expect(
      (await askSession(stack.api, 'https://elsewhere.example', { key: key.key }, from(nextAddress())))
        .status,
    ).toBe(403);
  });

  it("the widget's 429 is readable from the key's origins (its Retry-After exposed), from no other", async () => {
    const firm = await createFirm(stack);
    await createAgent(firm.client, firm.slug);
    const key = await createWidgetKey(firm.client, firm.slug);
    const site = 'https://firm.example';
    const address = nextAddress();
    for (let i = 0; i < OPEN_LIMIT; i++) {
      expect((await askSession(stack.api, site, { key: key.key }, from(address))).status).toBe(200);
    }
    const cors = (res: { headers: Headers }) => ({
      origin: res.headers.get('access-control-allow-origin'),
      exposed: res.headers.get('access-control-expose-headers'),
    });
    const readable = { origin: site, exposed: 'Retry-After,X-Next-Cursor,X-Request-Id' };
    const unreadable = { origin: null, exposed: null };
    const session = await askSession(stack.api, site, { key: key.key }, from(address));
    expectError(session, 429, 'rate_limited');
    expect(Number(session.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(cors(session)).toEqual(readable);
    const challenge = await stack.api.get(`/api/widget/challenge?key=${key.key}`, {
      Origin: site,
      ...from(address),
    });
    expectError(challenge, 429, 'rate_limited');
    expect(cors(challenge)).toEqual(readable);
    // Another origin, an unknown key, a body that is no JSON: still 429, and nothing to read.
    const elsewhere = await askSession(
      stack.api,
      'https://elsewhere.example',
      { key: key.key },
      from(address),
    );
    expectError(elsewhere, 429, 'rate_limited');
    expect(cors(elsewhere)).toEqual(unreadable);
    const unknown = await askSession(stack.api, site, { key: 'iwpk_unknown' }, from(address));
    expectError(unknown, 429, 'rate_limited');
    expect(cors(unknown)).toEqual(unreadable);
    const garbled = await stack.api.request('POST', '/api/widget/session', {
      rawBody: '{"key":',
      headers: { 'Content-Type': 'application/json', Origin: site, ...from(address) },
    });
    expectError(garbled, 429, 'rate_limited');
    expect(cors(garbled)).toEqual(unreadable);
  });

  it('the Clio callback: past the limit 429; another address is still answered', async () => {
    const address = nextAddress();
    const callback = (at: string) =>
      stack.api.get('/api/integrations/clio/callback?code=c0de&state=forged', from(at));
    const answers = [];
    for (let i = 0; i < OPEN_LIMIT * 3; i++) answers.push((await callback(address)).status);
    expect(answers.slice(0, OPEN_LIMIT).every((s) => s !== 429)).toBe(true);
    expect(new Set(answers.slice(OPEN_LIMIT))).toEqual(new Set([429]));
    expect((await callback(nextAddress())).status).not.toBe(429);
  });
});

describe('IPv6 addresses are limited per /64', () => {
  it('bad tokens from many addresses of one /64 share one limit; another /64 is not held to it', async () => {
    const firm = await createFirm(stack);
    const bad = stack.api.withToken('isk_not-a-real-key');
    const path = `/api/firms/${firm.slug}`;
    for (let i = 1; i <= BAD_ATTEMPTS; i++) {
      expectError(await bad.get(path, from(`2001:db8:77:1::${i.toString(16)}`)), 401, 'unauthorized');
    }
    expectError(await bad.get(path, from('2001:db8:77:1:ffff:1:2:3')), 429, 'rate_limited');
    expectError(await bad.get(path, from('2001:0db8:0077:0001::beef')), 429, 'rate_limited');
    expectError(await bad.get(path, from('2001:db8:77:2::1')), 401, 'unauthorized');
  });
});
