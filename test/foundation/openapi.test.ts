import SwaggerParser from '@apidevtools/swagger-parser';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirmSettings } from '../../core/domain/firms/firm-settings.js';
import {
  BROWSER_TEST_MS,
  launchChromium,
  mapHostToLoopback,
  openContext,
  recordRequests,
} from '../helpers/browser.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

const operations = () => stack.web.app.routes.map((r) => `${r.method} ${r.path}`).sort();

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const res = await stack.api.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(res.body))).resolves.toBeTruthy();
  });

  it('lists every route of the app, and nothing else', async () => {
    const doc = (await stack.api.get('/openapi.json')).body;
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    expect(documented).toEqual(operations());
    expect(operations().length).toBeGreaterThanOrEqual(11);
    const ids = stack.web.app.routes.map((r) => r.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('describes each route with the very schemas that validate its requests', async () => {
    const doc = (await stack.api.get('/openapi.json')).body;
    for (const route of stack.web.app.routes) {
      const op = doc.paths[route.path][route.method.toLowerCase()];
      expect(op.operationId).toBe(route.operationId);
      if (route.body !== undefined) {
        expect(op.requestBody.content['application/json'].schema).toEqual(
          JSON.parse(JSON.stringify(route.body)),
        );
      } else {
        expect(op.requestBody).toBeUndefined();
      }
      const params = (op.parameters as Array<{ name: string; in: string }>).map((p) => `${p.in}:${p.name}`);
      const expected = [
        ...Object.keys((route.params as { properties?: object } | undefined)?.properties ?? {}).map(
          (n) => `path:${n}`,
        ),
        ...Object.keys((route.query as { properties?: object } | undefined)?.properties ?? {}).map(
          (n) => `query:${n}`,
        ),
        ...Object.keys(route.requestHeaders ?? {}).map((n) => `header:${n}`),
      ];
      expect(params.sort()).toEqual(expected.sort());
      // Token routes declare the bearer scheme and their 401; open routes need no token.
      expect(op.security).toEqual(route.auth.kind === 'none' ? [] : [{ bearer: [] }]);
      if (route.auth.kind !== 'none') expect(op.responses['401']).toBeDefined();
      // A query string can make the request line too long for Node (431, answered before routing).
      if (route.query !== undefined) expect(op.responses['431']).toBeDefined();
      // A route counted per client address (no token to count by) can answer 429.
      if (route.addressLimited === true) expect(op.responses['429'], route.path).toBeDefined();
    }
    expect(doc.components.schemas.Error.properties.error.required).toEqual(['code', 'message']);
  });

  it('declares the optional Idempotency-Key header where a route reads it, and the key the service accepts', async () => {
    const doc = (await stack.api.get('/openapi.json')).body;
    for (const path of ['/api/v2/create-outbound-call', '/api/appointments']) {
      const header = (doc.paths[path].post.parameters as any[]).find((p) => p.in === 'header');
      expect(header, path).toMatchObject({
        name: 'Idempotency-Key',
        required: false,
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      });
      expect(new RegExp(header.schema.pattern).test('key-1')).toBe(true);
      expect(new RegExp(header.schema.pattern).test('a key')).toBe(false);
    }
  });

  it('a query parameter the service fills in when left out is not required', async () => {
    const doc = (await stack.api.get('/openapi.json')).body;
    const wronglyRequired: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const p of (op.parameters ?? []) as Array<{
          name: string;
          in: string;
          required: boolean;
          schema: any;
        }>) {
          if (p.in === 'query' && p.required && p.schema.default !== undefined) {
            wronglyRequired.push(`${method} ${path} ${p.name}`);
          }
        }
      }
    }
    expect(wronglyRequired).toEqual([]);
    // The export is answered without `format` (NDJSON), as the document now says.
    const firm = await stack.admin.post('/api/firms', { slug: `oa-${Date.now().toString(36)}`, name: 'F' });
    expect(firm.status).toBe(200);
    const res = await stack.admin.get(`/api/compliance/decisions/export?firmSlug=${firm.body.slug}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
  });
});

describe("GET /openapi.json: a firm's settings", () => {
  const MASK = '********';
  type Schema = Record<string, any>;
  const firmOperations = [
    ['post', '/api/firms'],
    ['get', '/api/firms/{slug}'],
    ['patch', '/api/firms/{slug}'],
  ] as const;
  const answerSchema = (doc: Schema, method: string, path: string): Schema =>
    doc.paths[path][method].responses['200'].content['application/json'].schema;
  const requestSchema = (doc: Schema, method: string, path: string): Schema =>
    doc.paths[path][method].requestBody.content['application/json'].schema;
  /** The branches of a property sent as value-or-null (or a union), flattened. */
  const branches = (schema: Schema): Schema[] =>
    schema.anyOf === undefined ? [schema] : (schema.anyOf as Schema[]).flatMap(branches);
  const objectBranch = (schema: Schema, provider: string): Schema =>
    branches(schema).find((b) => b.properties?.provider?.const === provider)!;

  it('every answer carrying a firm declares its settings property by property, no catch-all', async () => {
    const doc = (await stack.api.get('/openapi.json')).body as Schema;
    for (const [method, path] of firmOperations) {
      const settings = answerSchema(doc, method, path).properties.settings;
      expect(settings.type).toBe('object');
      expect(settings.additionalProperties).toBe(false);
      expect(Object.keys(settings.properties).sort()).toEqual(Object.keys(FirmSettings.properties).sort());
      expect(settings.properties.timezone).toMatchObject({ type: 'string', default: 'America/New_York' });
      expect(settings.properties.max_concurrent_calls).toMatchObject({ type: 'integer', default: 5 });
      expect(settings.properties.calling_window.properties.days.items).toMatchObject({
        minimum: 1,
        maximum: 7,
      });
    }
  });

  it('secrets are write-only in requests, and answers show only the mask for them', async () => {
    const doc = (await stack.api.get('/openapi.json')).body as Schema;
    for (const [method, path] of [firmOperations[0], firmOperations[2]]) {
      const sent = requestSchema(doc, method, path).properties.settings.properties;
      for (const key of ['voice_webhook_secret', 'booking_webhook_secret']) {
        expect(sent[key].writeOnly, key).toBe(true);
        expect(branches(sent[key]).find((b) => b.type === 'string')?.writeOnly, key).toBe(true);
      }
      expect(objectBranch(sent.crm, 'clio').properties.access_token.writeOnly).toBe(true);
      expect(objectBranch(sent.booking, 'calcom').properties.api_key.writeOnly).toBe(true);
      // Nothing else is write-only.
      expect(JSON.stringify(sent).match(/"writeOnly":true/g)).toHaveLength(6);
    }
    for (const [method, path] of firmOperations) {
      const shown = answerSchema(doc, method, path).properties.settings.properties;
      const mask = { type: 'string', const: MASK };
      expect(shown.voice_webhook_secret).toMatchObject(mask);
      expect(shown.booking_webhook_secret).toMatchObject(mask);
      expect(objectBranch(shown.crm, 'clio').properties.access_token).toMatchObject(mask);
      expect(objectBranch(shown.booking, 'calcom').properties.api_key).toMatchObject(mask);
      // A Clio connected with OAuth shows its state and no token.
      const oauth = branches(shown.crm).find((b) => b.properties?.status !== undefined)!;
      expect(Object.keys(oauth.properties).sort()).toEqual(['connected_at', 'provider', 'region', 'status']);
      expect(JSON.stringify(shown)).not.toContain('"writeOnly"');
    }
  });
});

describe('GET /docs', { timeout: BROWSER_TEST_MS }, () => {
  let browser: Browser;
  beforeAll(async () => {
    // A public-looking host name: swagger-ui behaves differently on localhost (the online validator badge).
    browser = await launchChromium(mapHostToLoopback('docs.intake.test'));
  });
  afterAll(async () => browser?.close());

  it('serves HTML whose scripts and styles all come from this server', async () => {
    const res = await stack.api.get('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    const assets = [...res.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) {
      expect(asset).toMatch(/^\/[^/]/);
      const fetched = await stack.api.get(asset);
      expect(fetched.status, asset).toBe(200);
      expect(fetched.headers.get('content-type')).toMatch(/^(text\/css|application\/javascript)/);
      expect(fetched.text.length).toBeGreaterThan(0);
    }
    expect((await stack.api.get('/docs/assets/..%2Fpackage.json')).status).toBe(404);
  });

  it('renders every operation in headless Chromium, with no request leaving this machine', async () => {
    const context = await openContext(browser);
    const requests = recordRequests(context);
    const page = await context.newPage();
    const problems: string[] = [];
    // (Chromium's own /favicon.ico 404 is not a page resource: it reaches neither 'response' nor these.)
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource'))
        problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('response', (r) => void (r.status() >= 400 && problems.push(`${r.status()} ${r.url()}`)));
    page.on('requestfailed', (r) => problems.push(`failed ${r.url()}`));
    try {
      const base = `http://docs.intake.test:${stack.web.port}`;
      const response = await page.goto(`${base}/docs`);
      expect(response?.status()).toBe(200);
      await page.locator('.opblock').first().waitFor({ state: 'visible' });
      const createFirm = page.locator('.opblock', { hasText: 'Create a firm (platform key)' });
      await createFirm.first().waitFor({ state: 'visible' });
      const rendered = await page.$$eval('.opblock', (blocks) =>
        blocks.map(
          (b) =>
            `${b.querySelector('.opblock-summary-method')?.textContent ?? ''} ${
              b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? ''
            }`,
        ),
      );
      expect(rendered.sort()).toEqual(operations());
      await expect(page.locator('.info .title').first().textContent()).resolves.toContain(
        'Intake Service API',
      );

      expect(requests.urls).toContain(`${base}/openapi.json`);
      expect(requests.outside(['docs.intake.test'])).toEqual([]);
      const images = await page.$$eval('img', (imgs) => imgs.map((i) => i.src));
      expect(images.filter((src) => !src.startsWith(`${base}/`) && !src.startsWith('data:'))).toEqual([]);
      expect(problems).toEqual([]);
    } catch (error) {
      // What the page asked for and what went wrong there are the clue to a step that never came.
      const seen = `requests:\n${requests.urls.join('\n')}\nproblems:\n${problems.join('\n')}`;
      if (error instanceof Error) error.message += `\n${seen}`;
      throw error;
    } finally {
      await context.close();
    }
  });
});
