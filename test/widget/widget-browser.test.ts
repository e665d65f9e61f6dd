// The widget test page in headless Chromium (docs/widget.md): it loads clean and offline, the
// widget chats with the built-in intake agent and is usable by keyboard and screen reader, the
// settings panel changes the widget and the snippet live, no query value becomes markup, and the
// widget token the page itself sends is good for its own firm's chat routes and nothing else.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { intakeReply } from '../../core/domain/intake/intake-agent.js';
import {
  BROWSER_TEST_MS,
  launchChromium,
  openContext,
  recordRequests,
  type RequestLog,
} from '../helpers/browser.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent, createChat, getChat, say } from '../chat/chat-helpers.js';
import { askEveryNonChatRoute } from './widget-helpers.js';

// page.evaluate callbacks run in the browser; this program is typed for Node, without the DOM library.
declare const document: any, window: any, getComputedStyle: (el: unknown) => any;

const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'artifacts');
const GREETING_MESSAGE = 'Hello, thank you for contacting us. I can help you get started.';

let stack: Stack;
let browser: Browser;
let firmA: Awaited<ReturnType<typeof createFirm>> & { agentId: string; secondAgentId: string };
let firmB: Awaited<ReturnType<typeof createFirm>> & { agentId: string };

beforeAll(async () => {
  stack = await startStack();
  const a = await createFirm(stack);
  const b = await createFirm(stack);
  const agentId = (await createAgent(a.client, a.slug)).agent_id;
  const secondAgentId = (await createAgent(a.client, a.slug, { agent_name: 'After-hours agent' })).agent_id;
  firmA = { ...a, agentId, secondAgentId };
  // The panel shows the snippet of the firm's newest widget key.
  const key = await a.client.post('/api/widget-keys', {
    firmSlug: a.slug,
    name: 'Website',
    allowed_origins: ['https://smith-lee.example'],
  });
  expect(key.status).toBe(200);
  firmB = { ...b, agentId: (await createAgent(b.client, b.slug)).agent_id };
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

interface Opened {
  context: BrowserContext;
  page: Page;
  requests: RequestLog;
  /** Console errors, page errors, failed requests and HTTP errors the page saw. */
  problems: string[];
}

/** The test page in a fresh browser context signed in with a firm's key (A's unless given; HTTP basic auth). */
async function openPage(query: Record<string, string>, firmKey: string = firmA.key): Promise<Opened> {
  const context = await openContext(browser, {
    httpCredentials: { username: 'firm-admin', password: firmKey, origin: stack.baseUrl },
    viewport: { width: 1280, height: 900 },
  });
  const requests = recordRequests(context);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  await page.goto(`${stack.baseUrl}/api/test-widget?${new URLSearchParams(query).toString()}`);
  return { context, page, requests, problems };
}

const launcher = (page: Page) => page.locator('.iw-launcher');
const messageBox = (page: Page) => page.getByRole('textbox', { name: 'Message' });
const log = (page: Page) => page.getByRole('log', { name: 'Conversation' });
const activeElement = (page: Page) =>
  page.evaluate(() => {
    // Focus inside the widget's shadow root shows on the page as its host element.
    const outer = document.activeElement;
    const el = outer?.shadowRoot?.activeElement ?? outer;
    return el === null ? null : `${el.tagName.toLowerCase()}.${el.className}`;
  });

/** Waits until the conversation holds a message with exactly this text (after its hidden "Agent: "). */
async function waitForMessage(page: Page, role: 'agent' | 'user', text: string): Promise<void> {
  await page.waitForFunction(
    ({ role, text }) =>
      [
        ...(document.querySelector('intake-widget')?.shadowRoot?.querySelectorAll(`.iw-msg-${role}`) ?? []),
      ].some((m) => m.lastChild?.textContent === text),
    { role, text },
  );
}

let capturedToken: string;
let widgetChatId: string;

describe('the page in headless Chromium', { timeout: BROWSER_TEST_MS }, () => {
  it('loads offline-clean, chats with the built-in intake agent, and works by keyboard', async () => {
    const { context, page, requests, problems } = await openPage({ agentId: firmA.agentId });
    try {
      const createChatRequest = page.waitForRequest((r) => r.url().endsWith('/api/v2/create-chat'));
      // Closed: a launcher with an accessible name, the panel hidden.
      const button = page.getByRole('button', { name: 'Open chat: Chat with us' });
      expect(await button.getAttribute('aria-expanded')).toBe('false');
      expect(await page.getByRole('dialog').count()).toBe(0);

      await button.click();
      const dialog = page.getByRole('dialog', { name: 'Chat with us' });
      await dialog.waitFor({ state: 'visible' });
      expect(await launcher(page).getAttribute('aria-expanded')).toBe('true');
      expect(await launcher(page).getAttribute('aria-controls')).toBe(await dialog.getAttribute('id'));
      expect(await activeElement(page)).toBe('input.iw-input');
      expect(await log(page).getAttribute('aria-live')).toBe('polite');

      // The configured greeting, then the agent's own first message from create-chat.
      await waitForMessage(page, 'agent', 'Hi! How can we help you today?');
      await waitForMessage(page, 'agent', `${GREETING_MESSAGE} ${DEFAULT_INTAKE_QUESTIONS[0]!.question}`);
      const request: Request = await createChatRequest;
      capturedToken = (await request.headerValue('authorization'))!.replace(/^Bearer /, '');
      expect(capturedToken).toMatch(/^iwt_/);

      // Enter sends.
      await messageBox(page).fill('Hello');
      const completion = page.waitForResponse((r) => r.url().endsWith('/api/v2/chat-completion'));
      await page.keyboard.press('Enter');
      widgetChatId = JSON.parse((await completion).request().postData()!).chatId;
      await waitForMessage(page, 'user', 'Hello');
      await waitForMessage(page, 'agent', intakeReply(DEFAULT_INTAKE_QUESTIONS, [], 'Hello'));
      expect(await messageBox(page).inputValue()).toBe('');

      // Escape closes and gives focus back to the launcher; Enter on it opens again, history kept.
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      expect(await activeElement(page)).toBe('button.iw-launcher');
      expect(await launcher(page).getAttribute('aria-expanded')).toBe('false');
      await page.keyboard.press('Enter');
      await dialog.waitFor({ state: 'visible' });
      expect(await activeElement(page)).toBe('input.iw-input');
      expect(await page.locator('.iw-msg-user').count()).toBe(1);

      expect(problems).toEqual([]);
      expect(requests.outside(['127.0.0.1'])).toEqual([]);
      const paths = requests.urls.map((u) =>
        new URL(u).pathname.replace(/^\/widget\/v\/[0-9a-f]{16}\//, '/widget/'),
      );
      expect(new Set(paths)).toEqual(
        new Set([
          '/api/test-widget',
          '/widget/widget.js',
          '/widget/test-widget.js',
          '/widget/test-widget.css',
          '/api/v2/create-chat',
          '/api/v2/chat-completion',
        ]),
      );
    } finally {
      await context.close();
    }
  });

  it("the token from the page's requests is refused on every other route, Bull Board included", async () => {
    const widget = stack.api.withToken(capturedToken);
    const answers = await askEveryNonChatRoute(stack, widget, firmA.slug);
    const operations = [...answers.keys()].map((k) => k.split(' ')[0]);
    for (const op of [
      'createOutboundCall',
      'listCalls',
      'getCall',
      'createFirm',
      'getFirm',
      'createApiKey',
      'listApiKeys',
      'revokeApiKey',
      'updateFirm',
      'listAgents',
      'createAgent',
      'getAgent',
      'updateAgent',
      'deleteAgent',
      'listVoices',
      'revokeSessions',
      'callWebhook',
      'testWidget',
    ]) {
      expect(operations).toContain(op);
    }
    for (const [request, res] of answers) {
      // RingCentral's deliveries carry its Verification-Token, never a bearer token: any bearer
      // is no credential there (401); everywhere else the widget's token is known and refused (403).
      if (request.startsWith('phoneWebhook ')) {
        expectError(res, 401, 'unauthorized');
        continue;
      }
      expect({ request, status: res.status }).toEqual({ request, status: 403 });
      expectError(res, 403, 'forbidden');
    }
    // Bull Board: as bearer a 403, as basic-auth password no operator key at all.
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      expectError(await widget.get(path), 403, 'forbidden');
      const basic = `Basic ${Buffer.from(`x:${capturedToken}`).toString('base64')}`;
      expectError(await stack.api.get(path, { Authorization: basic }), 401, 'unauthorized');
    }
    const clean = await widget.request('PUT', '/admin/queues/api/queues/calls/clean/completed', {
      headers: { Origin: stack.baseUrl },
    });
    expectError(clean, 403, 'forbidden');
  });

  it("cannot chat with another firm's agent, nor use another firm's chat or another visitor's", async () => {
    const widget = stack.api.withToken(capturedToken);
    expectError(
      await widget.post('/api/v2/create-chat', { agentId: firmB.agentId, firmSlug: firmB.slug }),
      403,
      'forbidden',
    );
    expectError(
      await widget.post('/api/v2/create-chat', { agentId: firmB.agentId, firmSlug: firmA.slug }),
      404,
      'agent_not_found',
    );
    const bChat = (await createChat(firmB.client, firmB.slug, firmB.agentId)).chat_id;
    const aChat = (await createChat(firmA.client, firmA.slug, firmA.agentId)).chat_id;
    const before = [await getChat(firmB.client, bChat), await getChat(firmA.client, aChat)];
    for (const chatId of [bChat, aChat]) {
      expectError(await widget.get(`/api/v2/get-chat/${chatId}`), 404, 'chat_not_found');
      expectError(
        await widget.post('/api/v2/chat-completion', { chatId, message: 'hi' }),
        404,
        'chat_not_found',
      );
      expectError(await widget.post('/api/v2/end-chat', { chatId }), 404, 'chat_not_found');
    }
    expect([await getChat(firmB.client, bChat), await getChat(firmA.client, aChat)]).toEqual(before);

    // Its own chat, opened by the page: readable, and the firm's own key sees it as usual.
    const own = await widget.get(`/api/v2/get-chat/${widgetChatId}`);
    expect(own.status).toBe(200);
    expect(own.body.messages.map((m: { content: string }) => m.content)).toContain('Hello');
    expect((await getChat(firmA.client, widgetChatId)).chat_id).toBe(widgetChatId);
    // Another of firm A's agents is fine: the token is for the firm's agents, not one of them.
    const second = await widget.post('/api/v2/create-chat', {
      agentId: firmA.secondAgentId,
      firmSlug: firmA.slug,
    });
    expect(second.status).toBe(200);
    expect(await say(widget, second.body.chat_id, 'Hello')).toBe(
      intakeReply(DEFAULT_INTAKE_QUESTIONS, [], 'Hello'),
    );
  });

  it('a message of 4,000 characters outside the BMP (emoji) is sent whole, as the service counts characters; the 4,001st is cut', async () => {
    // The service counts a message's characters as code points (an emoji is one); the input's
    // maxLength counts UTF-16 code units (an emoji is two), which cut such a message in half.
    const { context, page } = await openPage({ agentId: firmA.agentId });
    try {
      await page.getByRole('button', { name: 'Open chat: Chat with us' }).click();
      await waitForMessage(page, 'agent', `${GREETING_MESSAGE} ${DEFAULT_INTAKE_QUESTIONS[0]!.question}`);
      const whole = '\u{1F600}'.repeat(4000);
      await messageBox(page).fill(`${whole}\u{1F601}`);
      const completion = page.waitForResponse((r) => r.url().endsWith('/api/v2/chat-completion'));
      await page.keyboard.press('Enter');
      const response = await completion;
      const sent = (JSON.parse(response.request().postData()!) as { message: string }).message;
      expect(Array.from(sent).length).toBe(4000);
      expect(sent).toBe(whole);
      expect(response.status()).toBe(200);
    } finally {
      await context.close();
    }
  });

  it('a title and greeting of emoji within their limits (100 and 1,000 characters) are shown whole', async () => {
    // The service takes up to 100 characters of title, counted as code points; the widget cut it
    // at 100 UTF-16 code units, half an emoji title, and through the middle of an emoji.
    const title = `a${'\u{1F600}'.repeat(99)}`;
    const greeting = `b${'\u{1F44B}'.repeat(999)}`;
    const { context, page } = await openPage({ agentId: firmA.agentId, title, greeting });
    try {
      await launcher(page).waitFor();
      const shown = await launcher(page).getAttribute('aria-label');
      // Compared as code points, so that a difference reads as characters.
      expect(Array.from(shown!.replace(/^Open chat: /, '')).length).toBe(100);
      expect(shown).toBe(`Open chat: ${title}`);
      await launcher(page).click();
      await page.getByRole('dialog', { name: title }).waitFor({ state: 'visible' });
      await waitForMessage(page, 'agent', greeting);
    } finally {
      await context.close();
    }
  });

  it("the panel's title and greeting take 100 and 1,000 characters of emoji, as the service does, and no more", async () => {
    // The fields' maxlength counted UTF-16 code units (an emoji is two): half the characters the
    // service, the snippet and the widget take.
    const { context, page } = await openPage({ agentId: firmA.agentId });
    try {
      const title = `a${'\u{1F600}'.repeat(99)}`;
      const greeting = `b${'\u{1F44B}'.repeat(999)}`;
      await page.getByLabel('Title').fill(`${title}\u{1F601}`);
      await page.getByLabel('Greeting').fill(`${greeting}\u{1F601}`);
      expect(Array.from(await page.getByLabel('Title').inputValue()).length).toBe(100);
      expect(await page.getByLabel('Title').inputValue()).toBe(title);
      expect(await page.getByLabel('Greeting').inputValue()).toBe(greeting);
      const snippet = (await page.locator('#tw-snippet').textContent()) ?? '';
      expect(snippet).toContain(`data-title="${title}"`);
      expect(snippet).toContain(`data-greeting="${greeting}"`);
      expect(await launcher(page).getAttribute('aria-label')).toBe(`Open chat: ${title}`);
      // The link to this configuration is one the service accepts.
      const href = await page.locator('#tw-link').getAttribute('href');
      const linked = await firmA.client.get(
        new URL(href!, stack.baseUrl).pathname + new URL(href!, stack.baseUrl).search,
      );
      expect(linked.status).toBe(200);
    } finally {
      await context.close();
    }
  });

  it('a firm with no widget key still gets the snippet, naming a placeholder, and it follows the panel', async () => {
    const { context, page, problems } = await openPage({ firmSlug: firmB.slug }, firmB.key);
    try {
      const snippet = () => page.locator('#tw-snippet').textContent();
      await expect.poll(snippet).toContain('data-key="YOUR_WIDGET_KEY"');
      expect(await page.getByText('This firm has no widget key yet').isVisible()).toBe(true);
      await page.getByLabel('Title').fill('Brown & Co intake');
      expect(await snippet()).toContain('data-title="Brown &amp; Co intake"');
      expect(await snippet()).toMatch(
        /^<script src="http:\/\/127\.0\.0\.1:\d+\/widget\/v\/[0-9a-f]{16}\/widget\.js" /,
      );
      expect(await page.getByRole('button', { name: 'Copy snippet' }).isVisible()).toBe(true);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('changing the colour, position, title, greeting and agent changes the widget and the snippet', async () => {
    const { context, page, problems } = await openPage({ agentId: firmA.agentId });
    try {
      const snippet = () => page.locator('#tw-snippet').textContent();
      const launcherStyle = () =>
        launcher(page).evaluate((el) => {
          const box = el.getBoundingClientRect();
          return { background: getComputedStyle(el).backgroundColor, left: box.left, right: box.right };
        });
      const initial = await launcherStyle();
      expect(initial.background).toBe('rgb(29, 78, 216)');
      expect(initial.right).toBeGreaterThan(1280 - 40);
      expect(await snippet()).toContain('data-primary-color="#1d4ed8"');
      expect(await snippet()).toContain('data-position="right"');

      await page.getByLabel('Primary colour').fill('#c2410c');
      await page.getByLabel('Bottom left').check();
      const changed = await launcherStyle();
      expect(changed.background).toBe('rgb(194, 65, 12)');
      expect(changed.left).toBeLessThan(40);
      expect(await snippet()).toContain('data-primary-color="#c2410c"');
      expect(await snippet()).toContain('data-position="left"');
      expect(await snippet()).not.toContain('#1d4ed8');

      await page.getByLabel('Title').fill('Smith & Lee intake');
      await page.getByLabel('Greeting').fill('Welcome to Smith & Lee.');
      await page.getByLabel('Agent').selectOption(firmA.secondAgentId);
      expect(await snippet()).toContain('data-title="Smith &amp; Lee intake"');
      expect(await snippet()).toContain('data-greeting="Welcome to Smith &amp; Lee."');
      expect(await snippet()).toContain(`data-agent-id="${firmA.secondAgentId}"`);
      expect(await snippet()).toMatch(
        /^<script src="http:\/\/127\.0\.0\.1:\d+\/widget\/v\/[0-9a-f]{16}\/widget\.js" integrity="sha384-[A-Za-z0-9+/]{64}" crossorigin="anonymous" data-key="iwpk_[^"]+" data-agent-id=/,
      );
      const href = await page.locator('#tw-link').getAttribute('href');
      expect(href).toMatch(/^\/api\/test-widget\?/);
      expect(Object.fromEntries(new URL(href!, stack.baseUrl).searchParams)).toEqual({
        firmSlug: firmA.slug,
        agentId: firmA.secondAgentId,
        title: 'Smith & Lee intake',
        greeting: 'Welcome to Smith & Lee.',
        primaryColor: '#c2410c',
        position: 'left',
      });

      await page.getByRole('button', { name: 'Open chat: Smith & Lee intake' }).click();
      await page.getByRole('dialog', { name: 'Smith & Lee intake' }).waitFor({ state: 'visible' });
      await waitForMessage(page, 'agent', 'Welcome to Smith & Lee.');
      // The header takes the colour too, with text that reads on it.
      const header = await page
        .locator('.iw-header')
        .evaluate((el) => [getComputedStyle(el).backgroundColor, getComputedStyle(el).color]);
      expect(header).toEqual(['rgb(194, 65, 12)', 'rgb(255, 255, 255)']);
      // Copy: the snippet lands on the clipboard, or is selected for the person to copy.
      await page.getByRole('button', { name: 'Copy snippet' }).click();
      await page.waitForFunction(() => document.getElementById('tw-copy-status')?.textContent !== '');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

const PAYLOADS = [
  '"><script>window.__xss=1</script>',
  '\'><img src=x onerror="window.__xss=1">',
  'javascript:window.__xss=1',
  '</script><svg onload="window.__xss=1">',
];
const PARAMETERS = ['agentId', 'firmSlug', 'title', 'greeting', 'primaryColor', 'position'];

describe('no query value becomes markup or script', { timeout: BROWSER_TEST_MS }, () => {
  it('every parameter, every payload: window.__xss stays undefined and no element is created', async () => {
    const context = await openContext(browser, {
      httpCredentials: { username: 'firm-admin', password: firmA.key, origin: stack.baseUrl },
    });
    try {
      const page = await context.newPage();
      for (const name of PARAMETERS) {
        for (const payload of PAYLOADS) {
          const query = new URLSearchParams({
            firmSlug: firmA.slug,
            agentId: firmA.agentId,
            [name]: payload,
          });
          const response = await page.goto(`${stack.baseUrl}/api/test-widget?${query.toString()}`);
          const status = response!.status();
          const served = await response!.text();
          const shown = name === 'title' || name === 'greeting';
          expect({ name, payload, status }).toEqual({ name, payload, status: shown ? 200 : 400 });
          if (shown) {
            // Open the widget so the value reaches every place the scripts put it.
            await launcher(page).click();
            await page.locator('.iw-panel').waitFor({ state: 'visible' });
            if (name === 'title') expect(await page.locator('.iw-title').textContent()).toBe(payload);
            else await waitForMessage(page, 'agent', payload);
            expect(await page.locator('#tw-snippet').textContent()).toContain('data-' + name + '="');
          } else {
            expect(response!.headers()['content-type']).toMatch(/^application\/json/);
            expect(await page.locator('body').textContent()).toContain('invalid_request');
          }
          const found = await page.evaluate(() => ({
            xss: (window as unknown as { __xss?: unknown }).__xss,
            images: document.querySelectorAll('img').length,
            svgWithHandler: document.querySelectorAll('svg[onload]').length,
            handlers: [...document.querySelectorAll('*')].filter((el) =>
              [...el.attributes].some((a) => a.name.startsWith('on')),
            ).length,
            scripts: [...document.querySelectorAll('script')].map(
              (s) =>
                s.getAttribute('src')?.replace(/^\/widget\/v\/[0-9a-f]{16}\//, '/widget/') ??
                s.getAttribute('type'),
            ),
            javascriptLinks: [...document.querySelectorAll('[href],[src]')].filter((el) =>
              /^\s*javascript:/i.test(el.getAttribute('href') ?? el.getAttribute('src') ?? ''),
            ).length,
          }));
          expect({ name, payload, ...found }).toEqual({
            name,
            payload,
            xss: undefined,
            images: 0,
            svgWithHandler: 0,
            handlers: 0,
            scripts: shown ? ['application/json', '/widget/widget.js', '/widget/test-widget.js'] : [],
            javascriptLinks: 0,
          });
          // The served text itself: escaped, not merely stopped by the CSP.
          if (/[<>"']/.test(payload)) expect(served).not.toContain(payload);
          expect(served).not.toMatch(/<img|<svg onload|<script>window/i);
        }
      }
    } finally {
      await context.close();
    }
  });
});

describe('a look at it', { timeout: BROWSER_TEST_MS }, () => {
  it('writes a screenshot of the configured, opened widget after a chat to test/artifacts/', async () => {
    const { context, page, problems } = await openPage({
      agentId: firmA.agentId,
      title: 'Smith & Lee intake',
      greeting: 'Welcome! Tell us what happened and we will call you back.',
      primaryColor: '#0f766e',
      position: 'left',
    });
    try {
      await page.getByRole('button', { name: 'Open chat: Smith & Lee intake' }).click();
      await waitForMessage(page, 'agent', `${GREETING_MESSAGE} ${DEFAULT_INTAKE_QUESTIONS[0]!.question}`);
      const sent: string[] = [];
      for (const message of ['Hello', 'Jane Doe']) {
        await messageBox(page).fill(message);
        await page.keyboard.press('Enter');
        await waitForMessage(page, 'agent', intakeReply(DEFAULT_INTAKE_QUESTIONS, sent, message));
        sent.push(message);
      }
      await mkdir(ARTIFACTS, { recursive: true });
      const path = join(ARTIFACTS, 'widget-chat.png');
      const screenshot = await page.screenshot({ path });
      expect(screenshot.subarray(1, 4).toString()).toBe('PNG');
      await writeFile(path, screenshot);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
