// Bull Board must not be forgeable from another site (docs/operations.md#forgery).
// Every non-GET request under /admin/queues needs the service's own Origin (or Sec-Fetch-Site:
// same-origin) and, when it has a body, a JSON one; adding jobs from the board is off for
// everyone. A browser that holds the operator's basic-auth credentials is the attack: a page on
// another site auto-submits a form to the add-job route.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobType } from 'bullmq';
import { isScheduledRun, QUEUE, QUEUE_NAMES } from '../../jobs/queues.js';
import { BROWSER_TEST_MS, launchChromium, mapHostToLoopback, openContext } from '../helpers/browser.js';
import type { ApiResponse } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

const BOARD = '/admin/queues';
// A public base URL that differs from the socket the tests talk to, as behind a proxy.
const PUBLIC_BASE_URL = 'https://intake.example.test';
const ATTACKER_HOST = 'attacker.example';

let stack: Stack;
let firmB: Awaited<ReturnType<typeof createFirm>>;
let operator: string; // the basic-auth header of the platform key
let baseline: Record<string, number>;
const JOB_STATES: JobType[] = [
  'active',
  'completed',
  'delayed',
  'failed',
  'prioritized',
  'wait',
  'waiting-children',
];

beforeAll(async () => {
  // Workers run, so a forged call-events job would really land in firm B's calls.
  // TRUST_PROXY: the forwarded-host case below is a request through a trusted proxy.
  stack = await startStack({ workers: true, env: { PUBLIC_BASE_URL, TRUST_PROXY: 'true' } });
  firmB = await createFirm(stack);
  operator = `Basic ${Buffer.from(`operator:${stack.config.adminApiKey}`).toString('base64')}`;
  baseline = await jobCounts();
});
afterAll(async () => stack?.stop());

/**
 * Jobs in every state of every queue, but job schedulers' runs: those come and go on their timers
 * (the first ones when the workers start), whatever the board is asked.
 */
async function jobCounts(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const name of QUEUE_NAMES) {
    const jobs = await stack.services.queues[name].getJobs(JOB_STATES);
    counts[name] = jobs.filter((job) => job?.id !== undefined && !isScheduledRun(job.id)).length;
  }
  return counts;
}

async function expectNothingForged(): Promise<void> {
  expect(await jobCounts()).toEqual(baseline);
  const calls = await firmB.client.post('/api/v2/list-calls', { firmSlug: firmB.slug });
  expect(calls.status).toBe(200);
  expect(calls.body.calls).toEqual([]);
}

function board(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<ApiResponse> {
  return stack.api.request(method, `${BOARD}${path}`, {
    headers: { Authorization: operator, ...headers },
    ...(body === undefined ? {} : { rawBody: body }),
  });
}

const ADD = `/api/queues/${QUEUE.callEvents}/add`;
const forgedForm = () =>
  new URLSearchParams({
    name: 'call_event',
    'data[firm]': firmB.slug,
    'data[event]': 'call_ended',
    'data[call][call_id]': 'forged-1',
    'data[call][transcript]': 'FORGED',
  }).toString();
const forgedJson = () =>
  JSON.stringify({
    name: 'call_event',
    data: { firm: firmB.slug, event: 'call_ended', call: { call_id: 'forged-2', transcript: 'FORGED' } },
    options: {},
  });
// What <form enctype="text/plain"> sends when a field is named to make the body JSON.
const forgedTextPlain = () => `${forgedJson().slice(0, -1)},"x":"=ignored"}`;
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const TEXT = { 'Content-Type': 'text/plain' };
const JSON_TYPE = { 'Content-Type': 'application/json' };

describe('Bull Board refuses requests another site could forge (HTTP)', () => {
  const FOREIGN = { Origin: 'https://attacker.example' };

  it('a form-encoded add-job from a foreign origin, with valid basic auth: 403, nothing added', async () => {
    expectError(await board('POST', ADD, { ...FOREIGN, ...FORM }, forgedForm()), 403, 'forbidden');
    expectError(
      await board('POST', ADD, { ...FOREIGN, 'Sec-Fetch-Site': 'cross-site', ...FORM }, forgedForm()),
      403,
      'forbidden',
    );
    await expectNothingForged();
  });

  it('a text/plain or multipart body: 403, whatever the Origin says', async () => {
    const origins: Record<string, string>[] = [
      FOREIGN,
      { Origin: stack.baseUrl },
      { 'Sec-Fetch-Site': 'same-origin' },
    ];
    for (const origin of origins) {
      expectError(await board('POST', ADD, { ...origin, ...TEXT }, forgedTextPlain()), 403, 'forbidden');
      const multipart = new FormData();
      multipart.set('name', 'call_event');
      multipart.set('data[firm]', firmB.slug);
      const res = await fetch(`${stack.baseUrl}${BOARD}${ADD}`, {
        method: 'POST',
        headers: { Authorization: operator, ...origin },
        body: multipart,
      });
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ error: { code: 'forbidden' } });
      // Operator actions with a form or text body are refused too, even from the own origin.
      expectError(
        await board('PUT', `/api/queues/${QUEUE.calls}/clean/completed`, { ...origin, ...FORM }, 'a=b'),
        403,
        'forbidden',
      );
      expectError(
        await board('PUT', `/api/queues/${QUEUE.calls}/retry/failed`, { ...origin, ...TEXT }, '{}'),
        403,
        'forbidden',
      );
    }
    await expectNothingForged();
  });

  it('retry and clean from a foreign origin, Origin "null", or a same-site page: 403', async () => {
    const refused: Record<string, string>[] = [
      FOREIGN,
      { Origin: 'null' },
      { Origin: 'http://127.0.0.1:1' }, // another port of the same host is another origin
      { Origin: `${PUBLIC_BASE_URL}.attacker.example` },
      { Origin: stack.baseUrl, 'Sec-Fetch-Site': 'same-site' },
      { Origin: stack.baseUrl, 'Sec-Fetch-Site': 'cross-site' },
      { 'Sec-Fetch-Site': 'none' },
    ];
    for (const headers of refused) {
      for (const path of [
        `/api/queues/${QUEUE.calls}/retry/failed`,
        `/api/queues/${QUEUE.calls}/clean/completed`,
        `/api/queues/${QUEUE.calls}/pause`,
      ]) {
        expectError(await board('PUT', path, headers), 403, 'forbidden');
        expectError(await board('PUT', path, { ...headers, ...JSON_TYPE }, '{}'), 403, 'forbidden');
      }
    }
    expect(await stack.services.queues[QUEUE.calls].isPaused()).toBe(false);
  });

  it('no Origin and no Sec-Fetch-Site: 403, with basic auth and with the platform key as bearer', async () => {
    const path = `/api/queues/${QUEUE.calls}/clean/completed`;
    expectError(await board('PUT', path, {}), 403, 'forbidden');
    expectError(await board('PUT', path, JSON_TYPE, '{}'), 403, 'forbidden');
    expectError(await stack.admin.put(`${BOARD}${path}`, {}), 403, 'forbidden');
    expectError(await board('POST', ADD, JSON_TYPE, forgedJson()), 403, 'forbidden');
    // Refused before the credentials are looked at, so a forged request never meets a challenge.
    expectError(await stack.api.request('PUT', `${BOARD}${path}`, { headers: FOREIGN }), 403, 'forbidden');
    await expectNothingForged();
  });

  it('same origin with JSON (or no body): an operator action is allowed', async () => {
    const allowed: Record<string, string>[] = [
      { Origin: stack.baseUrl },
      { Origin: PUBLIC_BASE_URL },
      { 'Sec-Fetch-Site': 'same-origin' },
      // The origin a proxy reports for the request (Koa runs with proxy: true).
      {
        Origin: 'https://board.internal.example',
        'X-Forwarded-Proto': 'https',
        'X-Forwarded-Host': 'board.internal.example',
      },
    ];
    for (const headers of allowed) {
      const clean = await board('PUT', `/api/queues/${QUEUE.calls}/clean/completed`, headers);
      expect({ headers, status: clean.status }).toEqual({ headers, status: 200 });
      const retry = await board(
        'PUT',
        `/api/queues/${QUEUE.simulator}/retry/failed`,
        { ...headers, 'Content-Type': 'application/json; charset=utf-8' },
        '{}',
      );
      expect({ headers, status: retry.status }).toEqual({ headers, status: 200 });
    }
    // The bearer form works too once it says where it comes from.
    expect((await stack.admin.put(`${BOARD}/api/queues/${QUEUE.calls}/clean/completed`)).status).toBe(403);
    const bearer = await stack.admin.request('PUT', `${BOARD}/api/queues/${QUEUE.calls}/clean/completed`, {
      headers: { Origin: stack.baseUrl },
    });
    expect(bearer.status).toBe(200);
    // Pause and resume round-trip from the own origin.
    const own = { Origin: stack.baseUrl };
    expect((await board('PUT', `/api/queues/${QUEUE.simulator}/pause`, own)).status).toBe(200);
    expect(await stack.services.queues[QUEUE.simulator].isPaused()).toBe(true);
    expect((await board('PUT', `/api/queues/${QUEUE.simulator}/resume`, own)).status).toBe(200);
    expect(await stack.services.queues[QUEUE.simulator].isPaused()).toBe(false);
    // Reading stays as it was: no Origin needed for GET.
    const queues = await board('GET', '/api/queues', {});
    expect(queues.status).toBe(200);
  });

  it('adding a job is refused even for the operator from the own origin with JSON', async () => {
    const own: Record<string, string>[] = [{ Origin: stack.baseUrl }, { 'Sec-Fetch-Site': 'same-origin' }];
    const variants = [
      ADD,
      `/api/queues/${QUEUE.calls}/add`,
      `/api/queues/${QUEUE.callEvents}/ADD`, // the board's router matches paths case-insensitively
      `/api/queues/call%2Devents/add`, // and decodes the queue name
      `/API/Queues/${QUEUE.callEvents}/Add`,
      `/api/queues/${QUEUE.callEvents}/add/`,
    ];
    for (const headers of own) {
      for (const path of variants) {
        const res = await board('POST', path, { ...headers, ...JSON_TYPE }, forgedJson());
        expect({ path, status: res.status }).toEqual({ path, status: 403 });
        expectError(res, 403, 'forbidden');
      }
    }
    await expectNothingForged();
  });
});

describe(
  'Bull Board in headless Chromium: a page on another site cannot act through the operator',
  { timeout: BROWSER_TEST_MS },
  () => {
    let browser: Browser;
    let attacker: Server;
    let attackerPort: number;
    let context: BrowserContext;
    let page: Page;

    /** The attacker's pages: each auto-submits a form (or fires a no-cors fetch) at the board. */
    function attackerPage(kind: string): string {
      const action = `${stack.baseUrl}${BOARD}${ADD}`;
      const hidden = (name: string, value: string) =>
        `<input type="hidden" name='${name.replace(/'/g, '&#39;')}' value='${value.replace(/'/g, '&#39;')}'>`;
      if (kind === 'form') {
        const fields = [...new URLSearchParams(forgedForm())].map(([k, v]) => hidden(k, v)).join('');
        return `<form method="POST" action="${action}">${fields}</form><script>document.forms[0].submit()</script>`;
      }
      if (kind === 'text') {
        const body = forgedTextPlain();
        const eq = body.indexOf('=');
        return (
          `<form method="POST" enctype="text/plain" action="${action}">` +
          `${hidden(body.slice(0, eq), body.slice(eq + 1))}</form><script>document.forms[0].submit()</script>`
        );
      }
      // fetch without CORS: the response is opaque, but the request would still be sent.
      return `<script>
      fetch(${JSON.stringify(action)}, { method: 'POST', mode: 'no-cors', credentials: 'include',
        headers: { 'Content-Type': 'text/plain' }, body: ${JSON.stringify(forgedTextPlain())} })
        .then(() => { document.title = 'sent'; }, () => { document.title = 'sent'; });
    </script>`;
    }

    beforeAll(async () => {
      attacker = createServer((req, res) => {
        const kind = new URL(req.url ?? '/', 'http://x').searchParams.get('kind') ?? 'form';
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><html><body>${attackerPage(kind)}</body></html>`);
      });
      await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
      attackerPort = (attacker.address() as AddressInfo).port;
      browser = await launchChromium(mapHostToLoopback(ATTACKER_HOST));
      // The browser holds the operator's credentials for the service's origin only, as after
      // the operator signed in to the board.
      context = await openContext(browser, {
        httpCredentials: { username: 'operator', password: stack.config.adminApiKey, origin: stack.baseUrl },
      });
      page = await context.newPage();
      const opened = await page.goto(`${stack.baseUrl}${BOARD}`);
      expect(opened?.status()).toBe(200);
      await page.getByText(QUEUE.callEvents, { exact: true }).first().waitFor({ state: 'visible' });
    });
    afterAll(async () => {
      await context?.close();
      await browser?.close();
      await new Promise((resolve) => attacker?.close(resolve));
    });

    it('auto-submitted forms and no-cors fetches from another site (and another port) add nothing', async () => {
      const addUrl = `${stack.baseUrl}${BOARD}${ADD}`;
      const attackers = [`http://${ATTACKER_HOST}:${attackerPort}`, `http://127.0.0.1:${attackerPort}`];
      for (const origin of attackers) {
        for (const kind of ['form', 'text']) {
          const landed = page.waitForResponse((r) => r.url() === addUrl && r.request().method() === 'POST');
          await page.goto(`${origin}/?kind=${kind}`);
          const response = await landed;
          expect({ origin, kind, status: response.status() }).toEqual({ origin, kind, status: 403 });
          expect(await response.json()).toMatchObject({ error: { code: 'forbidden' } });
          // The forged POST carried the operator's credentials: only the Origin check stopped it.
          expect(await response.request().headerValue('authorization')).toMatch(/^Basic /);
        }
        const sent = page.waitForRequest((r) => r.url() === addUrl && r.method() === 'POST');
        await page.goto(`${origin}/?kind=fetch`);
        await sent;
        await page.waitForFunction('document.title === "sent"');
      }
      await expectNothingForged();
    });

    it('afterwards the operator board still loads and works in the same browser', async () => {
      const opened = await page.goto(`${stack.baseUrl}${BOARD}`);
      expect(opened?.status()).toBe(200);
      for (const name of QUEUE_NAMES) {
        await page.getByText(name, { exact: true }).first().waitFor({ state: 'visible' });
      }
      // The board's own calls, as its UI makes them: same-origin fetches, JSON or no body.
      const results = await page.evaluate(
        async ({ base, calls, simulator, add, body }) => {
          const call = async (method: string, path: string, json?: string) => {
            const res = await fetch(`${base}${path}`, {
              method,
              ...(json === undefined ? {} : { headers: { 'Content-Type': 'application/json' }, body: json }),
            });
            return res.status;
          };
          return {
            queues: await call('GET', '/api/queues'),
            clean: await call('PUT', `/api/queues/${calls}/clean/completed`),
            retry: await call('PUT', `/api/queues/${calls}/retry/failed`, '{}'),
            pause: await call('PUT', `/api/queues/${simulator}/pause`),
            resume: await call('PUT', `/api/queues/${simulator}/resume`),
            add: await call('POST', add, body),
          };
        },
        { base: BOARD, calls: QUEUE.calls, simulator: QUEUE.simulator, add: ADD, body: forgedJson() },
      );
      expect(results).toEqual({ queues: 200, clean: 200, retry: 200, pause: 200, resume: 200, add: 403 });
      expect(await stack.services.queues[QUEUE.simulator].isPaused()).toBe(false);
      await expectNothingForged();
    });
  },
);
