// The operator dashboard (docs/operations.md#bull-board): Bull Board names the environment, and
// a second operator key, ADMIN_READONLY_API_KEY, sees every queue but cannot retry, clean, remove or
// change anything (403 from the server, not only hidden buttons), while the platform key still can. The
// board offers no "Add job" (refused for everyone) to anyone.
import { Worker } from 'bullmq';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../core/platform/config.js';
import { createRedis, redisSettings } from '../../core/platform/redis.js';
import { QUEUE, QUEUE_NAMES } from '../../jobs/queues.js';
import { BROWSER_TEST_MS, launchChromium, openContext, recordRequests } from '../helpers/browser.js';
import type { ApiResponse } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { rand, startStack, type Stack } from '../helpers/stack.js';

const BOARD = '/admin/queues';
const READONLY_KEY = `ro_${rand(16)}`;
const Q = QUEUE.simulator; // no worker consumes it in this file: its jobs stay where they are put

let stack: Stack;
let jobs: { failed: string; completed: string; delayed: string };

const basic = (password: string) => `Basic ${Buffer.from(`operator:${password}`).toString('base64')}`;

/** Jobs of the test queue by state. */
async function counts(): Promise<Record<string, number>> {
  const all = await stack.services.queues[Q].getJobCounts('failed', 'completed', 'delayed', 'waiting');
  return all;
}

beforeAll(async () => {
  stack = await startStack({ env: { ADMIN_READONLY_API_KEY: READONLY_KEY, APP_ENV: 'staging' } });
  // One failed, one completed and one delayed job, made by a worker of this test's own.
  const queue = stack.services.queues[Q];
  const failed = await queue.add('fails', {}, { attempts: 1 });
  const completed = await queue.add('succeeds', {}, { attempts: 1 });
  const connection = createRedis(redisSettings(stack.config), 'worker');
  const worker = new Worker(
    Q,
    async (job) => {
      if (job.name === 'fails') throw new Error('this job fails on purpose');
      return 'done';
    },
    { connection, prefix: stack.config.queuePrefix },
  );
  await eventually(async () => expect(await counts()).toMatchObject({ failed: 1, completed: 1 }));
  await worker.close();
  connection.disconnect();
  const delayed = await queue.add('later', { n: 1 }, { delay: 3_600_000 });
  jobs = { failed: failed.id!, completed: completed.id!, delayed: delayed.id! };
});
afterAll(async () => stack?.stop());

function board(
  password: string,
  method: string,
  path: string,
  body?: unknown,
  scheme: 'basic' | 'bearer' = 'basic',
): Promise<ApiResponse> {
  const authorization = scheme === 'basic' ? basic(password) : `Bearer ${password}`;
  return stack.api.request(method, `${BOARD}${path}`, {
    headers: { Authorization: authorization, Origin: stack.baseUrl },
    ...(body === undefined ? {} : { body }),
  });
}

/** Every change the board's API offers, as its own page sends them (own origin, JSON or no body). */
const changes = (): Array<[string, string, unknown?]> => [
  ['PUT', `/api/queues/${Q}/retry/failed`],
  ['PUT', `/api/queues/${Q}/${jobs.failed}/retry`],
  ['PUT', `/api/queues/${Q}/clean/completed`],
  ['PUT', `/api/queues/${Q}/${jobs.completed}/clean`],
  ['PUT', `/api/queues/${Q}/${jobs.delayed}/promote`],
  ['PUT', `/api/queues/${Q}/promote`],
  ['PUT', `/api/queues/${Q}/pause`],
  ['PUT', `/api/queues/${Q}/resume`],
  ['PUT', '/api/queues/pause'],
  ['PUT', '/api/queues/resume'],
  ['PUT', `/api/queues/${Q}/empty`],
  ['PUT', `/api/queues/${Q}/obliterate`, {}],
  ['PUT', `/api/queues/${Q}/concurrency`, { concurrency: 1 }],
  ['POST', `/api/queues/${Q}/add`, { name: 'x', data: {}, options: {} }],
  ['PATCH', `/api/queues/${Q}/${jobs.delayed}/update-data`, { data: { n: 2 } }],
  ['PATCH', `/api/queues/${Q}/${jobs.delayed}/delay`, { delay: 1 }],
];

describe('the read-only operator key', () => {
  it('opens the board (basic auth and bearer), which names the environment and shows every queue read-only', async () => {
    const page = await board(READONLY_KEY, 'GET', '');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const uiConfig = JSON.parse(
      /<script id="__UI_CONFIG__" type="application\/json">(.*?)<\/script>/.exec(page.text)![1]!,
    );
    expect(uiConfig.boardTitle).toBe('Intake queues (read-only)');
    expect(uiConfig.environment).toMatchObject({ label: 'staging' });
    for (const scheme of ['basic', 'bearer'] as const) {
      const queues = await board(READONLY_KEY, 'GET', '/api/queues', undefined, scheme);
      expect(queues.status).toBe(200);
      const listed = queues.body.queues as Array<{ name: string; readOnlyMode: boolean }>;
      expect(listed.map((q) => q.name).sort()).toEqual([...QUEUE_NAMES].sort());
      expect(listed.every((q) => q.readOnlyMode)).toBe(true);
      expect(
        (await board(READONLY_KEY, 'GET', `/api/queues/${Q}/${jobs.failed}`, undefined, scheme)).status,
      ).toBe(200);
    }
  });

  it('cannot retry, clean, remove, promote, pause, resume, add or update: 403 for each, nothing changes', async () => {
    const before = await counts();
    for (const scheme of ['basic', 'bearer'] as const) {
      for (const [method, path, body] of changes()) {
        const res = await board(READONLY_KEY, method, path, body, scheme);
        expect({ method, path, status: res.status }).toEqual({ method, path, status: 403 });
        expectError(res, 403, 'forbidden');
      }
    }
    expect(await counts()).toEqual(before);
    expect(await stack.services.queues[Q].isPaused()).toBe(false);
    expect((await stack.services.queues[Q].getJob(jobs.delayed))?.data).toEqual({ n: 1 });
  });

  it('is no API token: every API route answers 401', async () => {
    const client = stack.api.withToken(READONLY_KEY);
    expectError(await client.get('/api/v2/list-agents'), 401, 'unauthorized');
    expectError(await client.post('/api/firms', { slug: `f-${rand(3)}`, name: 'x' }), 401, 'unauthorized');
    expectError(await client.get('/api/test-widget'), 401, 'unauthorized');
  });

  it('a wrong password still meets the challenge', async () => {
    const res = await board(`${READONLY_KEY}x`, 'GET', '');
    expectError(res, 401, 'unauthorized');
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer, Basic realm=/);
  });
});

describe('the platform key still operates the queues', () => {
  it('retries, removes, promotes and cleans where the read-only key could not', async () => {
    const admin = stack.config.adminApiKey;
    const ok = async (method: string, path: string) => {
      const res = await board(admin, method, path);
      expect({ path, ok: res.status >= 200 && res.status < 300 }).toEqual({ path, ok: true });
    };
    await ok('PUT', `/api/queues/${Q}/${jobs.failed}/retry`);
    await ok('PUT', `/api/queues/${Q}/${jobs.completed}/clean`);
    expect(await stack.services.queues[Q].getJob(jobs.completed)).toBeUndefined();
    await ok('PUT', `/api/queues/${Q}/${jobs.delayed}/promote`);
    // Cleaning by state is let through too (Bull Board keeps jobs younger than 5 s, so it may find none).
    await ok('PUT', `/api/queues/${Q}/clean/completed`);
    expect(await counts()).toMatchObject({ failed: 0, completed: 0, delayed: 0, waiting: 2 });
    const listed = (await board(admin, 'GET', '/api/queues')).body.queues as Array<{ readOnlyMode: boolean }>;
    expect(listed.every((q) => !q.readOnlyMode)).toBe(true);
    // Adding stays refused for everyone.
    expectError(
      await board(admin, 'POST', `/api/queues/${Q}/add`, { name: 'x', data: {} }),
      403,
      'forbidden',
    );
  });
});

describe('ADMIN_READONLY_API_KEY and APP_ENV in the configuration', () => {
  const base = {
    REDIS_URL: 'redis://127.0.0.1:6379',
    MONGODB_URI: 'mongodb://127.0.0.1:27017/x',
    ADMIN_API_KEY: 'a'.repeat(32),
    SESSION_SECRET: 's'.repeat(32),
    SECRETS_KEY: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
  };
  const problems = (env: Record<string, string>): string[] => {
    try {
      loadConfig({ ...base, ...env });
      return [];
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
  };

  it('optional; when set, at least 24 characters and not the platform key; APP_ENV a plain name', () => {
    expect(loadConfig(base).adminReadonlyApiKey).toBeUndefined();
    expect(loadConfig({ ...base, ADMIN_READONLY_API_KEY: 'r'.repeat(24) }).adminReadonlyApiKey).toBe(
      'r'.repeat(24),
    );
    expect(problems({ ADMIN_READONLY_API_KEY: 'short' }).join()).toMatch(/ADMIN_READONLY_API_KEY/);
    expect(problems({ ADMIN_READONLY_API_KEY: base.ADMIN_API_KEY }).join()).toMatch(
      /ADMIN_READONLY_API_KEY must differ/,
    );
    expect(loadConfig(base).appEnv).toBe('development');
    expect(loadConfig({ ...base, NODE_ENV: 'production' }).appEnv).toBe('production');
    expect(loadConfig({ ...base, NODE_ENV: 'production', APP_ENV: 'staging' }).appEnv).toBe('staging');
    expect(problems({ APP_ENV: '<b>prod</b>' }).join()).toMatch(/APP_ENV/);
  });
});

describe('in headless Chromium', { timeout: BROWSER_TEST_MS }, () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());

  const signedIn = (password: string): Promise<BrowserContext> =>
    openContext(browser, {
      httpCredentials: { username: 'operator', password, origin: stack.baseUrl },
      viewport: { width: 1280, height: 800 },
    });

  it('the read-only key sees every queue and the environment, no actions, and its changes are refused', async () => {
    const context = await signedIn(READONLY_KEY);
    try {
      const requests = recordRequests(context);
      const page = await context.newPage();
      const opened = await page.goto(`${stack.baseUrl}${BOARD}/queue/${Q}`);
      expect(opened?.status()).toBe(200);
      for (const name of QUEUE_NAMES) await page.getByText(name, { exact: true }).first().waitFor();
      await page.getByText('staging', { exact: true }).first().waitFor({ state: 'visible' });
      expect(await page.title()).toBe('Intake queues (read-only)');
      // The queue's action menu is not offered at all on a read-only board.
      expect(await page.locator('button[aria-haspopup="menu"]').count()).toBe(0);
      // What the board's buttons would send, sent from its own page: refused by the server.
      const statuses = await page.evaluate(
        async ({ base, q, failed }) => {
          const put = async (path: string) => (await fetch(`${base}${path}`, { method: 'PUT' })).status;
          return [
            await put(`/api/queues/${q}/retry/failed`),
            await put(`/api/queues/${q}/clean/completed`),
            await put(`/api/queues/${q}/${failed}/clean`),
            (await fetch(`${base}/api/queues`)).status,
          ];
        },
        { base: BOARD, q: Q, failed: jobs.failed },
      );
      expect(statuses).toEqual([403, 403, 403, 200]);
      expect(requests.outside(['127.0.0.1'])).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the platform key gets the actions, but no "Add job", "Duplicate" or "Update Data" (refused)', async () => {
    const context = await signedIn(stack.config.adminApiKey);
    try {
      const page = await context.newPage();
      await page.goto(`${stack.baseUrl}${BOARD}/queue/${Q}?status=latest`);
      await page.getByText('staging', { exact: true }).first().waitFor({ state: 'visible' });
      expect(await page.title()).toBe('Intake queues');
      // A job card: its clean button shows; its duplicate button (the add-job form) and its update-data
      // button (a pencil) do not.
      await page.locator('button:has(> svg.lucide-trash-2)').first().waitFor({ state: 'visible' });
      expect(await page.locator('button:has(> svg.lucide-files)').first().isVisible()).toBe(false);
      expect(await page.locator('button:has(> svg.lucide-pencil)').first().isVisible()).toBe(false);
      await page.locator('button[aria-haspopup="menu"]').first().click();
      await page.getByRole('menuitem', { name: 'Pause' }).waitFor({ state: 'visible' });
      expect(await page.getByRole('menuitem', { name: 'Add job' }).isVisible()).toBe(false);
      expect(await page.getByText('Add job').isVisible()).toBe(false);
    } finally {
      await context.close();
    }
  });
});
