// What the web process loads. The real web entry runs as a child process with a loader hook that
// lists every module it resolves, imported or required (test/helpers/module-log.mjs), up to its
// first request:
// - with OTEL_EXPORTER_OTLP_ENDPOINT unset, nothing of OpenTelemetry's SDK, instrumentations or
//   exporter (prom-client requires the API package, whose calls do nothing without an SDK); the
//   same run with the variable set is the control that the list would show them;
// - never swagger-ui-dist's browser bundle: /docs serves it as a file, and requiring it (its
//   package's index does) cost every start about 0.45 s of CPU and its heap.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rand, startStack, type Stack } from '../helpers/stack.js';
import { startWebProcess } from '../helpers/web-process.js';

const hook = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'module-log.mjs');
const TRACING_MODULES = /@opentelemetry\/(?!api\/)|bullmq-otel|import-in-the-middle|\/telemetry\/sdk\.[jt]s/;
const SWAGGER_UI_CODE = /\/swagger-ui-dist\/.*\.js$/;
/** A module of ours, compiled (the test run's copy) or its TypeScript (tsx). */
const ours = (path: string) => new RegExp(`${path}\\.[jt]s$`);

let stack: Stack;
let folder: string;
/** The modules of a web process with tracing off, and of one with it on. */
let off: string[];
let on: string[];

/** The modules a web process resolved by the time it served its requests. */
async function modulesOfWeb(env: Record<string, string>): Promise<string[]> {
  const log = join(folder, `${Object.keys(env).length}-${Date.now()}.log`);
  const web = await startWebProcess({
    ...stack.env,
    ...env,
    MODULE_LOG: log,
    NODE_OPTIONS: `--import=${hook}`,
  });
  try {
    // A request that reaches MongoDB and Redis: a firm created.
    const firm = await fetch(`${web.baseUrl}/api/firms`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${stack.config.adminApiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ slug: `firm-${Date.now().toString(36)}-${rand(6)}`, name: 'Module log' }),
    });
    expect(firm.status).toBe(200);
    // The API's documentation page and the Swagger UI code it loads, served from the package.
    const page = await fetch(`${web.baseUrl}/docs`);
    expect(page.status).toBe(200);
    const bundle = await fetch(`${web.baseUrl}/docs/assets/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect(await bundle.text()).toContain('SwaggerUIBundle');
  } finally {
    await web.stop();
  }
  return readFileSync(log, 'utf8').split('\n').filter(Boolean);
}

beforeAll(async () => {
  stack = await startStack();
  folder = mkdtempSync(join(tmpdir(), 'module-log-'));
  // Two processes of their own, started side by side (each logs to its own file).
  [off, on] = await Promise.all([
    modulesOfWeb({}),
    modulesOfWeb({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }),
  ]);
});
afterAll(async () => {
  await stack?.stop();
  rmSync(folder, { recursive: true, force: true });
});

describe('the modules the web process loads', () => {
  it('the list is real: the service’s own modules, and what a package requires of its own', () => {
    expect(off.some((url) => ours('/api/web').test(url))).toBe(true);
    expect(off.some((url) => ours('/core/platform/telemetry/start').test(url))).toBe(true);
    // The MongoDB driver's own modules, required by its index (CommonJS), not imported by us.
    expect(off.some((url) => /\/node_modules\/mongodb\/lib\/cursor\/find_cursor\.js$/.test(url))).toBe(true);
  });

  it('tracing switched off: no OpenTelemetry module; switched on, its SDK', () => {
    expect(off.filter((url) => TRACING_MODULES.test(url))).toEqual([]);
    expect(on.some((url) => url.includes('/@opentelemetry/sdk-node/'))).toBe(true);
    expect(on.some((url) => ours('/core/platform/telemetry/sdk').test(url))).toBe(true);
  });

  it('no Swagger UI code, though /docs served it', () => {
    expect(off.filter((url) => SWAGGER_UI_CODE.test(url))).toEqual([]);
    expect(on.filter((url) => SWAGGER_UI_CODE.test(url))).toEqual([]);
  });
});
