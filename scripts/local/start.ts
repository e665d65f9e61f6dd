// `npm start`: the whole service on one machine, as the Procfile runs it in production —
// release, then a web and a worker process — over local Redis and FerretDB unless
// REDIS_URL / MONGODB_URI are set, with the built-in voice simulator by default.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '../../core/platform/config.js';
import { freePort, startLocalServices, LocalServiceError } from './services.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const say = (line: string): void => void process.stderr.write(`[start] ${line}\n`);

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

function runTs(entry: string, env: NodeJS.ProcessEnv, name: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, entry)], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = (chunk: Buffer): string =>
    chunk
      .toString()
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => `${name.padEnd(7)}| ${l}\n`)
      .join('');
  child.stdout?.on('data', (c: Buffer) => process.stdout.write(prefix(c)));
  child.stderr?.on('data', (c: Buffer) => process.stderr.write(prefix(c)));
  return child;
}

async function waitForReady(url: string, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

async function main(): Promise<void> {
  const env = process.env;
  let local;
  try {
    local = await startLocalServices({ redisUrl: env.REDIS_URL, mongodbUri: env.MONGODB_URI }, say);
  } catch (err) {
    say(err instanceof LocalServiceError ? err.message : `could not start local services: ${String(err)}`);
    process.exit(1);
  }
  const port = env.PORT ?? String((await portIsFree(3000)) ? 3000 : await freePort());
  const generatedKey = env.ADMIN_API_KEY === undefined;
  const childEnv: NodeJS.ProcessEnv = {
    ...env,
    REDIS_URL: local.redisUrl,
    MONGODB_URI: local.mongodbUri,
    ADMIN_API_KEY: env.ADMIN_API_KEY ?? `adm_${randomBytes(24).toString('base64url')}`,
    SESSION_SECRET: env.SESSION_SECRET ?? randomBytes(32).toString('base64url'),
    PORT: port,
    PUBLIC_BASE_URL: env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${port}`,
    VOICE_PROVIDER: env.VOICE_PROVIDER ?? 'simulator',
    // Local fakes (Slack, Clio) listen on 127.0.0.1; production leaves this unset (false).
    ALLOW_PRIVATE_URLS: env.ALLOW_PRIVATE_URLS ?? 'true',
  };
  try {
    loadConfig(childEnv);
  } catch (err) {
    if (err instanceof ConfigError) say(err.message);
    await local.stop();
    process.exit(1);
  }

  const children: ChildProcess[] = [];
  let stopping = false;
  const stopAll = async (code: number): Promise<never> => {
    stopping = true;
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
    await local.stop();
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  const release = runTs('core/platform/db/release.ts', childEnv, 'release');
  const releaseCode = await new Promise<number>((resolve) =>
    release.once('exit', (code) => resolve(code ?? 1)),
  );
  if (releaseCode !== 0) {
    say('release failed; see above');
    await stopAll(1);
  }
  for (const [entry, name] of [
    ['api/server.ts', 'web'],
    ['workers/main.ts', 'worker'],
  ] as const) {
    const child = runTs(entry, childEnv, name);
    child.once('exit', (code) => {
      if (stopping) return;
      say(`${name} exited with code ${code}; stopping`);
      void stopAll(1);
    });
    children.push(child);
  }
  const base = childEnv.PUBLIC_BASE_URL!;
  await waitForReady(`http://127.0.0.1:${port}/readyz`, 60_000);
  const lines = [
    '',
    'Intake Service is running.',
    `  API            ${base}`,
    `  API reference  ${base}/docs`,
    `  Bull Board     ${base}/admin/queues   (any user name, the platform key as password)`,
    `  Widget test    ${base}/api/test-widget?firmSlug=<slug>   (the same, or a firm's API key)`,
    `  Health         ${base}/healthz  ${base}/readyz  ${base}/metrics`,
    `  Voice provider ${childEnv.VOICE_PROVIDER}`,
    `  Private URLs   ${childEnv.ALLOW_PRIVATE_URLS === 'true' ? 'allowed (ALLOW_PRIVATE_URLS=true)' : 'refused'}`,
    `  Redis          ${local.redisUrl}`,
    `  MongoDB        ${local.mongodbUri}`,
    generatedKey
      ? `  Platform key   ${childEnv.ADMIN_API_KEY}   (generated for this run; set ADMIN_API_KEY to keep one)`
      : '  Platform key   the ADMIN_API_KEY you set',
    '',
    'Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(lines.join('\n'));
}

await main();
