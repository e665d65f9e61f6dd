// The bench's bounds for the two hot routes (bench/lib/duties-handler.ts: each route's duties on
// bare node:http, no Koa) are only bounds if they do what the routes do. So each request here goes
// to both, over real sockets, and must get the same status, error code and headers; a request they
// take is acted on by both (a call registered, a delivery queued), and one they refuse by neither.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeDuties } from '../../bench/lib/duties-handler.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { JOBS } from '../../jobs/table.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../calls/support.js';

const SECRET = `whsec_${rand(16)}`;

let stack: Stack;
let server: Server;
let dutiesBase: string;
let slug: string;
let token: string;
let agentId: string;
let otherSlug: string;

beforeAll(async () => {
  stack = await startStack();
  const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
  slug = firm.slug;
  token = firm.key;
  agentId = await createAgent(firm.client, slug);
  otherSlug = (await createFirm(stack)).slug;
  const handle = routeDuties(stack.services);
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  dutiesBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await stack?.stop();
});

const analyzed = (callId: string, extra: Record<string, unknown> = {}) => ({
  event: 'call_analyzed',
  call: {
    call_id: callId,
    agent_id: 'agent_x',
    call_status: 'ended',
    start_timestamp: Date.now() - 60_000,
    end_timestamp: Date.now(),
    transcript: 'Agent: Hello.\nUser: Hi.\n',
    call_analysis: { call_summary: 'A short call.' },
    ...extra,
  },
});

interface Answer {
  status: number;
  body: { received?: boolean; call_id?: string; status?: string; error?: { code: string } };
  headers: Headers;
}

async function post(
  base: string,
  raw: string,
  headers: Record<string, string>,
  path = `/api/v2/${slug}/webhook`,
): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers, body: raw });
  return { status: res.status, body: (await res.json()) as Answer['body'], headers: res.headers };
}

const signed = (raw: string) => ({
  'content-type': 'application/json',
  'x-retell-signature': signRetellWebhook(raw, SECRET),
});

/** The same request to the route and to the duties; both answers. */
async function both(
  raw: (side: string) => string,
  headers: (raw: string) => Record<string, string>,
  path?: string,
): Promise<[Answer, Answer]> {
  const routeRaw = raw('route');
  const dutiesRaw = raw('duties');
  return [
    await post(stack.baseUrl, routeRaw, headers(routeRaw), path),
    await post(dutiesBase, dutiesRaw, headers(dutiesRaw), path),
  ];
}

/** Whether a call event for `callId` is in the queue (the stack runs no workers: nothing takes it). */
async function queued(callId: string): Promise<boolean> {
  const jobs = await stack.services.queues[JOBS.callEvent.queue].getJobs([
    'waiting',
    'prioritized',
    'delayed',
  ]);
  return jobs.some(
    (job) => (job?.data as { call?: { call_id?: string } } | undefined)?.call?.call_id === callId,
  );
}

describe("the call webhook's duties without Koa (the bench's bound)", () => {
  it('take a signed delivery as the route does: 200, the same headers, the event queued', async () => {
    const id = rand();
    const [route, duties] = await both(
      (side) => JSON.stringify(analyzed(`call_${side}_${id}`)),
      (raw) => ({ ...signed(raw), 'x-request-id': `req-${id}` }),
    );
    expect(route.status).toBe(200);
    expect(duties.status).toBe(200);
    expect(duties.body).toEqual(route.body);
    for (const name of ['x-request-id', 'x-content-type-options', 'vary', 'content-type']) {
      expect(duties.headers.get(name), name).toBe(route.headers.get(name));
    }
    expect(duties.headers.get('x-request-id')).toBe(`req-${id}`);
    expect(await queued(`call_route_${id}`)).toBe(true);
    expect(await queued(`call_duties_${id}`)).toBe(true);
  });

  const refusals: [
    string,
    (id: string) => [(side: string) => string, (raw: string) => Record<string, string>, string?],
  ][] = [
    [
      'a wrong signature (401)',
      (id) => [
        (s) => JSON.stringify(analyzed(`c_${s}_${id}`)),
        (raw) => ({ ...signed(raw), 'x-retell-signature': signRetellWebhook(raw, 'whsec_other') }),
      ],
    ],
    [
      'a malformed signature header, before the body (401)',
      (id) => [
        (s) => JSON.stringify(analyzed(`c_${s}_${id}`)),
        () => ({ 'content-type': 'application/json', 'x-retell-signature': 'v=1,d=zz' }),
      ],
    ],
    [
      'a signature six minutes old (401)',
      (id) => [
        (s) => JSON.stringify(analyzed(`c_${s}_${id}`)),
        (raw) => ({
          'content-type': 'application/json',
          'x-retell-signature': signRetellWebhook(raw, SECRET, Date.now() - 6 * 60_000),
        }),
      ],
    ],
    [
      'no signature at all (401)',
      (id) => [
        (s) => JSON.stringify(analyzed(`c_${s}_${id}`)),
        () => ({ 'content-type': 'application/json' }),
      ],
    ],
    [
      'a firm that does not exist (401, as a wrong key)',
      (id) => [(s) => JSON.stringify(analyzed(`c_${s}_${id}`)), signed, '/api/v2/no-such-firm/webhook'],
    ],
    [
      'a body that is not JSON (415)',
      (id) => [
        (s) => `event=call_analyzed&call=${s}${id}`,
        (raw) => ({ ...signed(raw), 'content-type': 'application/x-www-form-urlencoded' }),
      ],
    ],
    [
      'a body that does not parse (400)',
      (id) => [(s) => `{"event":"call_analyzed","call":{"call_id":"c_${s}_${id}"`, signed],
    ],
    [
      'a body nested 70 levels deep (400)',
      (id) => [
        (s) =>
          JSON.stringify(
            analyzed(`c_${s}_${id}`, { metadata: JSON.parse('{"a":'.repeat(70) + '1' + '}'.repeat(70)) }),
          ),
        signed,
      ],
    ],
    [
      'a body the schema refuses (400)',
      (id) => [(s) => JSON.stringify({ event: 42, call: { call_id: `c_${s}_${id}` } }), signed],
    ],
    ['a call event without its call (400)', () => [() => JSON.stringify({ event: 'call_analyzed' }), signed]],
  ];

  it.each(refusals)('refuse %s as the route does, and queue nothing', async (_name, make) => {
    const id = rand();
    const [raw, headers, path] = make(id);
    const [route, duties] = await both(raw, headers, path);
    expect(route.status).toBeGreaterThanOrEqual(400);
    expect(duties.status).toBe(route.status);
    expect(duties.body.error?.code).toBe(route.body.error?.code);
    expect(duties.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await queued(`c_route_${id}`)).toBe(false);
    expect(await queued(`c_duties_${id}`)).toBe(false);
  });
});

describe("create-outbound-call's duties without Koa (the bench's bound)", () => {
  const CREATE = '/api/v2/create-outbound-call';
  const json = (extra: Record<string, string> = {}) => ({
    'content-type': 'application/json',
    authorization: `Bearer ${token}`,
    ...extra,
  });
  const request = (toNumber: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ toNumber, agentId, firmSlug: slug, ...extra });
  let n = 0;
  const nextNumber = () => `+1212555${String(1000 + (n++ % 9000)).padStart(4, '0')}`;

  /** The calls registered for the firm, by the number they are to dial. */
  const callsTo = (toNumber: string) =>
    stack.services.mongo.db.collection('calls').countDocuments({ firm: slug, to_number: toNumber });

  it('register a call as the route does: 200, the same status and headers, the call stored', async () => {
    const numbers = [nextNumber(), nextNumber()];
    const route = await post(
      stack.baseUrl,
      request(numbers[0]!),
      json({ 'x-request-id': 'req-create-1' }),
      CREATE,
    );
    const duties = await post(
      dutiesBase,
      request(numbers[1]!),
      json({ 'x-request-id': 'req-create-1' }),
      CREATE,
    );
    expect(route.status).toBe(200);
    expect(duties.status).toBe(200);
    expect(duties.body.status).toBe(route.body.status);
    expect(duties.body.call_id).toMatch(/^call_/);
    for (const name of ['x-request-id', 'x-content-type-options', 'vary', 'content-type']) {
      expect(duties.headers.get(name), name).toBe(route.headers.get(name));
    }
    expect(await callsTo(numbers[0]!)).toBe(1);
    expect(await callsTo(numbers[1]!)).toBe(1);
  });

  it('answer a repeated Idempotency-Key with the same call, marked replayed, as the route does', async () => {
    const answers: Answer[][] = [];
    for (const base of [stack.baseUrl, dutiesBase]) {
      const key = `idem-${rand()}`;
      const raw = request(nextNumber());
      answers.push([
        await post(base, raw, json({ 'idempotency-key': key }), CREATE),
        await post(base, raw, json({ 'idempotency-key': key }), CREATE),
      ]);
    }
    for (const [first, again] of answers) {
      expect(again!.status).toBe(200);
      expect(again!.body.call_id).toBe(first!.body.call_id);
      expect(again!.headers.get('idempotent-replayed')).toBe('true');
    }
  });

  const refusals: [string, () => { raw: string; headers: Record<string, string> }][] = [
    [
      'no token (401)',
      () => ({ raw: request(nextNumber()), headers: { 'content-type': 'application/json' } }),
    ],
    [
      'a token that is no key (401)',
      () => ({ raw: request(nextNumber()), headers: json({ authorization: 'Bearer sk_nothing' }) }),
    ],
    [
      "another firm's slug (403)",
      () => ({ raw: request(nextNumber(), { firmSlug: otherSlug }), headers: json() }),
    ],
    [
      'another firm named in the query (403)',
      () => ({ raw: request(nextNumber()), headers: json(), query: `?firmSlug=${otherSlug}` }),
    ],
    [
      'an agent the firm does not have (404)',
      () => ({ raw: request(nextNumber(), { agentId: 'agent_missing' }), headers: json() }),
    ],
    [
      'a body that is not JSON (415)',
      () => ({ raw: `toNumber=${nextNumber()}`, headers: json({ 'content-type': 'text/plain' }) }),
    ],
    ['a body that does not parse (400)', () => ({ raw: '{"toNumber":', headers: json() })],
    ['a body the schema refuses (400)', () => ({ raw: request('not a number'), headers: json() })],
    [
      'a NUL character in the body (400)',
      () => ({
        raw: request(nextNumber(), { dynamicVariables: { name: 'a\u0000b' } }),
        headers: json(),
      }),
    ],
    [
      'a body nested 70 levels deep (400)',
      () => ({
        raw: request(nextNumber(), {
          dynamicVariables: JSON.parse('{"a":'.repeat(70) + '1' + '}'.repeat(70)),
        }),
        headers: json(),
      }),
    ],
    [
      'a malformed Idempotency-Key (400)',
      () => ({ raw: request(nextNumber()), headers: json({ 'idempotency-key': 'x'.repeat(1000) }) }),
    ],
  ];

  it.each(refusals)('refuse %s as the route does, and register no call', async (_name, make) => {
    const answers: Answer[] = [];
    const numbers: string[] = [];
    for (const base of [stack.baseUrl, dutiesBase]) {
      const { raw, headers, query } = make() as {
        raw: string;
        headers: Record<string, string>;
        query?: string;
      };
      numbers.push(
        (JSON.parse(raw.startsWith('{"toNumber":"') ? raw : '{}') as { toNumber?: string }).toNumber ?? '',
      );
      answers.push(await post(base, raw, headers, `${CREATE}${query ?? ''}`));
    }
    const [route, duties] = answers as [Answer, Answer];
    expect(route.status).toBeGreaterThanOrEqual(400);
    expect(duties.status).toBe(route.status);
    expect(duties.body.error?.code).toBe(route.body.error?.code);
    for (const number of numbers.filter((x) => x.startsWith('+'))) expect(await callsTo(number)).toBe(0);
  });
});
