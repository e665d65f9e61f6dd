// The widget on a firm's own website (docs/widget.md#embed), in headless Chromium with
// two origins: the service on one loopback port, the firm's static site on another, under the
// strict host CSP the README gives. The page holds nothing but the snippet the API hands out.
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintWidgetToken } from '../../core/domain/access/widget-token.js';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { intakeReply } from '../../core/domain/intake/intake-agent.js';
import { BROWSER_TEST_MS, launchChromium } from '../helpers/browser.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../chat/chat-helpers.js';
import { askSession, createWidgetKey, type WidgetKey } from './widget-key-helpers.js';
import {
  openSite,
  seenOnWire,
  snippetOf,
  startFirmSite,
  statusText,
  waitForMessage,
  widgetPart,
  type FirmSite,
} from './embed-helpers.js';

// page.evaluate callbacks run in the browser; this program is typed for Node, without the DOM library.
declare const document: any, getComputedStyle: (el: unknown) => any;

const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'artifacts');
const GREETING_MESSAGE = 'Hello, thank you for contacting us. I can help you get started.';

let stack: Stack;
let browser: Browser;
let site: FirmSite;
/** A third origin, not among the key's allowed origins, serving the same page. */
let elsewhere: FirmSite;
let firm: Awaited<ReturnType<typeof createFirm>> & { agentId: string };
let key: WidgetKey;
let snippet: string;

beforeAll(async () => {
  stack = await startStack();
  const f = await createFirm(stack);
  firm = { ...f, agentId: (await createAgent(f.client, f.slug)).agent_id };
  site = await startFirmSite(stack.baseUrl);
  elsewhere = await startFirmSite(stack.baseUrl);
  key = await createWidgetKey(f.client, f.slug, { allowed_origins: [site.origin] });
  snippet = await snippetOf(
    f.client,
    key.id,
    `?${new URLSearchParams({ title: 'Smith & Lee intake', primaryColor: '#0f766e' }).toString()}`,
  );
  site.setBody(snippet);
  elsewhere.setBody(snippet);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await site?.stop();
  await elsewhere?.stop();
  await stack?.stop();
});

describe('the snippet', { timeout: BROWSER_TEST_MS }, () => {
  it('is one script tag: the versioned widget.js, its SRI hash of the served bytes, crossorigin, the key', async () => {
    expect(snippet).toMatch(
      /^<script src="http:\/\/127\.0\.0\.1:\d+\/widget\/v\/[0-9a-f]{16}\/widget\.js" integrity="sha384-[A-Za-z0-9+/]{64}" crossorigin="anonymous" data-key="iwpk_[A-Za-z0-9_-]+" data-title="Smith &amp; Lee intake" data-primary-color="#0f766e" async><\/script>$/,
    );
    const src = /src="([^"]+)"/.exec(snippet)![1]!;
    const served = await fetch(src, { headers: { Origin: site.origin } });
    expect(served.status).toBe(200);
    expect(served.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(served.headers.get('access-control-allow-origin')).toBe('*');
    const bytes = Buffer.from(await served.arrayBuffer());
    const integrity = /integrity="([^"]+)"/.exec(snippet)![1]!;
    expect(integrity).toBe(`sha384-${createHash('sha384').update(bytes).digest('base64')}`);
    expect(src).toContain(`/widget/v/${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}/`);
    // Another version's path is not served (it would not match its pinned hash anyway).
    expectError(await stack.api.get('/widget/v/0000000000000000/widget.js'), 404, 'widget_version_not_found');

    const plain = await firm.client.get(`/api/widget-keys/${key.id}/snippet`);
    expect(plain.body).toEqual({
      id: key.id,
      html: `<script src="${src}" integrity="${integrity}" crossorigin="anonymous" data-key="${key.key}" async></script>`,
      src,
      integrity,
    });
  });

  it('only for the key owner: another firm 404, a widget token 403, no token 401', async () => {
    const other = await createFirm(stack);
    expectError(await other.client.get(`/api/widget-keys/${key.id}/snippet`), 404, 'widget_key_not_found');
    expect((await stack.admin.get(`/api/widget-keys/${key.id}/snippet`)).status).toBe(200);
    const widgetToken = (await mintWidgetToken(firm.slug, stack.config.sessionSecret)).token;
    expectError(
      await stack.api.withToken(widgetToken).get(`/api/widget-keys/${key.id}/snippet`),
      403,
      'forbidden',
    );
    expectError(await stack.api.get(`/api/widget-keys/${key.id}/snippet`), 401, 'unauthorized');
  });
});

describe('on the firm site, under its strict CSP', { timeout: BROWSER_TEST_MS }, () => {
  it('opens, greets, takes three turns to the next intake question, and end-chat creates the lead', async () => {
    const { context, page, problems, network } = await openSite(browser, `${site.origin}/`);
    try {
      const launcher = page.getByRole('button', { name: 'Open chat: Smith & Lee intake' });
      await launcher.click();
      await page.getByRole('dialog', { name: 'Smith & Lee intake' }).waitFor({ state: 'visible' });
      await waitForMessage(page, 'agent', 'Hi! How can we help you today?');
      await waitForMessage(page, 'agent', `${GREETING_MESSAGE} ${DEFAULT_INTAKE_QUESTIONS[0]!.question}`);

      const sent: string[] = [];
      for (const message of ['Jane Doe', '+1 415 555 0134', 'jane.doe@example.com']) {
        await page.getByRole('textbox', { name: 'Message' }).fill(message);
        await page.keyboard.press('Enter');
        await waitForMessage(page, 'agent', intakeReply(DEFAULT_INTAKE_QUESTIONS, sent, message));
        sent.push(message);
      }
      // After name, phone and email, the intake's next question: the kind of matter.
      const last = intakeReply(DEFAULT_INTAKE_QUESTIONS, sent.slice(0, 2), sent[2]!);
      expect(last).toContain(DEFAULT_INTAKE_QUESTIONS[3]!.question);

      // The host page's hostile CSS reached neither the host element nor the shadow tree.
      const look = await widgetPart(page, '.iw-launcher').evaluate((el: any) => ({
        background: getComputedStyle(el).backgroundColor,
        font: getComputedStyle(el).fontSize,
        hostOpacity: getComputedStyle(document.querySelector('intake-widget')).opacity,
        hostDisplay: getComputedStyle(document.querySelector('intake-widget')).display,
        panelDisplay: getComputedStyle(el.getRootNode().querySelector('.iw-panel')).display,
        family: getComputedStyle(el.getRootNode().querySelector('.iw-msg')).fontFamily,
      }));
      expect(look).toMatchObject({
        background: 'rgb(15, 118, 110)',
        hostOpacity: '1',
        hostDisplay: 'inline',
        panelDisplay: 'flex',
      });
      expect(look.font).not.toBe('40px');
      expect(look.family).toMatch(/^system-ui/);

      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'widget-firm-site.png') });

      const ended = page.waitForResponse((r) => r.url().endsWith('/api/v2/end-chat'));
      await page.getByRole('button', { name: 'End chat' }).click();
      expect((await ended).status()).toBe(200);
      expect(await statusText(page)).toMatch(/^Thank you\. This conversation has ended/);

      const leads = await firm.client.get(`/api/leads?firmSlug=${firm.slug}`);
      expect(leads.status).toBe(200);
      expect(leads.body.leads).toHaveLength(1);
      expect(leads.body.leads[0]).toMatchObject({
        source: 'chat',
        email: 'jane.doe@example.com',
      });
      expect(leads.body.leads[0].phone).toMatch(/4155550134$/);

      expect(problems).toEqual([]);
      expect(network.filter((line) => !line.startsWith('200 ') && !line.startsWith('204 '))).toEqual([]);
      const hosts = new Set(network.map((line) => new URL(line.split(' ')[2]!).origin));
      expect(hosts).toEqual(new Set([site.origin, stack.baseUrl]));
    } finally {
      await context.close();
    }
  });

  it('on an origin the key does not allow: no token, a clear message, 403 origin_not_allowed', async () => {
    const { context, page, network, wire } = await openSite(browser, `${elsewhere.origin}/`);
    try {
      await page.getByRole('button', { name: 'Open chat: Smith & Lee intake' }).click();
      expect(await statusText(page)).toMatch(
        /^This chat is not available on this website: its address is not among the widget key’s allowed origins/,
      );
      // The preflight is answered for any origin; the request itself is refused, with no CORS
      // headers, so the page cannot read the answer, while the browser's log has it.
      const session = `${stack.baseUrl}/api/widget/session`;
      await seenOnWire(
        wire,
        `204 OPTIONS ${session}`,
        `403 POST ${session}`,
        `CORS MissingAllowOriginHeader POST ${session}`,
      );
      // No token was issued, so no chat was asked for.
      expect([...network, ...wire].filter((line) => line.includes('/api/v2/'))).toEqual([]);
    } finally {
      await context.close();
    }
    // The same request, as that page sent it: 403 origin_not_allowed.
    const refused = await askSession(stack.api, elsewhere.origin, { key: key.key });
    expectError(refused, 403, 'origin_not_allowed');
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });
});
