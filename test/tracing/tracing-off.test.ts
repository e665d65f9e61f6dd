// OTEL_EXPORTER_OTLP_ENDPOINT unset: the web process loads nothing of OpenTelemetry. The real
// web entry runs as a child process with a loader hook that lists every module it resolves;
// the same run with the variable set is the control that the list would show them.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rand, startStack, type Stack } from '../helpers/stack.js';
import { startWebProcess } from '../helpers/web-process.js';

const hook = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'module-log.mjs');
const TRACING_MODULES = /@opentelemetry\/|bullmq-otel|import-in-the-middle|\/telemetry\/sdk\.[jt]s/;
/** A module of ours, compiled (the test run's copy) or its TypeScript (tsx). */
const ours = (path: string) => new RegExp(`${path}\\.[jt]s$`);

let stack: Stack;
let folder: string;

beforeAll(async () => {
  stack = await startStack();
  folder = mkdtempSync(join(tmpdir(), 'module-log-'));
});
afterAll(async () => {
  await stack?.stop();
  rmSync(folder, { recursive: true, force: true });
});

/** The modules a web process resolved by the time it served one request. */
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
  } finally {
    await web.stop();
  }
  return readFileSync(log, 'utf8').split('\n').filter(Boolean);
}

describe('tracing switched off', () => {
  it('loads no OpenTelemetry module in the web process; switched on, it does', async () => {
    // Two processes of their own, started side by side (each logs to its own file).
    const [off, on] = await Promise.all([
      modulesOfWeb({}),
      modulesOfWeb({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }),
    ]);
    // The list is real: the service's own modules are in it.
    expect(off.some((url) => ours('/api/web').test(url))).toBe(true);
    expect(off.some((url) => ours('/core/platform/telemetry/start').test(url))).toBe(true);
    expect(off.filter((url) => TRACING_MODULES.test(url))).toEqual([]);

    expect(on.some((url) => url.includes('/@opentelemetry/sdk-node/'))).toBe(true);
    expect(on.some((url) => ours('/core/platform/telemetry/sdk').test(url))).toBe(true);
  }, 120_000);
});
