// `npm start`: the whole service on one machine, as the Procfile runs it in production —
// release, then a web and a worker process — over local Redis and FerretDB unless
// REDIS_URL / MONGODB_URI are set, with the built-in voice simulator by default.
// Ctrl-C, SIGTERM or a hang-up stops the web and worker processes, then the stores, then
// removes their temporary folder, and exits 0.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '../../core/platform/config.js';
import { redisSettings } from '../../core/platform/redis.js';
import { COMPILED_DIR_ENV, entryArgs, useCompiledCopy } from './compiled.js';
import { launch, type Launched } from './launcher.js';
import { launchAsProcfile } from './procfile.js';
import { freePort, startLocalServices, type LocalServices } from './services.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const say = (line: string): void => void process.stderr.write(`[start] ${line}\n`);
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

/** The stores, once started (undefined if they could not be). */
let local: Promise<LocalServices | undefined> = Promise.resolve(undefined);
/** The compiled copy this run made (removed at the stop), once made. */
let compiledCopy: Promise<string | undefined> = Promise.resolve(undefined);
/** The web and worker processes, in the order they are stopped. */
const children: Launched[] = [];
let stopping: Promise<never> | undefined;

/** Stops everything this run started, in order and once, then exits with `code`. */
function shutdown(code: number, why?: string): Promise<never> {
  return (stopping ??= (async () => {
    if (why !== undefined) say(why);
    say('stopping ...');
    // The web and worker processes drain their work against the stores, so they go first.
    for (const child of children) await child.stop('SIGTERM', 30_000);
    try {
      await (await local)?.stop();
    } catch (err) {
      say(`could not stop the local stores cleanly: ${message(err)}`);
      code ||= 1;
    }
    const copy = await compiledCopy.catch(() => undefined);
    if (copy !== undefined) await rm(copy, { recursive: true, force: true });
    say('stopped');
    process.exit(code);
  })());
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void shutdown(0));

/** Runs `entry` (the release step) from the compiled copy. */
function runEntry(entry: string, env: NodeJS.ProcessEnv, name: string): Launched {
  return launch({
    name,
    command: process.execPath,
    args: entryArgs(entry),
    cwd: root,
    env,
    output: { prefix: `${name.padEnd(7)}| ` },
  });
}

/**
 * The service compiled for this run (compiled.ts), with source maps, so that a stack trace still
 * names the TypeScript. A copy given by the caller (INTAKE_COMPILED_DIR) is used as it is.
 */
async function compileForRun(): Promise<string | undefined> {
  if (process.env[COMPILED_DIR_ENV]) return undefined;
  return useCompiledCopy(`start-${process.pid}-${randomBytes(3).toString('hex')}`, { sourceMaps: true });
}

/** Runs the web or the worker, compiled, with its Procfile line's variables and node flags. */
function runProcess(type: 'web' | 'worker', env: NodeJS.ProcessEnv, ready?: { url: string }): Launched {
  return launchAsProcfile(type, env, {
    name: type,
    output: { prefix: `${type.padEnd(7)}| ` },
    ...(ready === undefined ? {} : { ready }),
  });
}

/**
 * SECRETS_KEY when set; else the key this checkout's runs keep in .local/secrets-key (made by the
 * first run, owner-only), so what one run sealed in a kept MONGODB_URI the next can open.
 */
async function localSecretsKey(env: NodeJS.ProcessEnv): Promise<string> {
  if (env.SECRETS_KEY !== undefined && env.SECRETS_KEY.trim() !== '') return env.SECRETS_KEY;
  const file = join(root, '.local', 'secrets-key');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const key = randomBytes(32).toString('base64');
  await mkdir(join(root, '.local'), { recursive: true });
  await writeFile(file, `${key}\n`, { mode: 0o600, flag: 'wx' }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  return (await readFile(file, 'utf8')).trim();
}

async function main(): Promise<void> {
  const env = process.env;
  local = startLocalServices({ redisUrl: env.REDIS_URL, mongodbUri: env.MONGODB_URI }, say, {
    ownGroups: true,
  }).catch((err: unknown) => {
    // A Ctrl-C during start-up also reaches initdb and the like: that failure is the stop.
    if (stopping === undefined) say(`could not start the local stores: ${message(err)}`);
    return undefined;
  });
  // Side by side with the stores' start (about half a second of esbuild).
  compiledCopy = compileForRun();
  const compiled = compiledCopy.then(
    () => true,
    (err: unknown) => {
      if (stopping === undefined) say(`could not compile the service: ${message(err)}`);
      return false;
    },
  );
  const stores = await local;
  if (stores === undefined) return shutdown(1);
  if (!(await compiled)) return shutdown(1);
  // PORT=0 (or unset, with 3000 taken) asks for any free port.
  const port =
    env.PORT && env.PORT !== '0'
      ? env.PORT
      : String(env.PORT !== '0' && (await portIsFree(3000)) ? 3000 : await freePort());
  const generatedKey = env.ADMIN_API_KEY === undefined;
  const childEnv: NodeJS.ProcessEnv = {
    ...env,
    REDIS_URL: stores.redisUrl,
    MONGODB_URI: stores.mongodbUri,
    ADMIN_API_KEY: env.ADMIN_API_KEY ?? `adm_${randomBytes(24).toString('base64url')}`,
    SESSION_SECRET: env.SESSION_SECRET ?? randomBytes(32).toString('base64url'),
    SECRETS_KEY: await localSecretsKey(env),
    PORT: port,
    PUBLIC_BASE_URL: env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${port}`,
    // Stack traces through the compiled copy's source maps.
    NODE_OPTIONS: [env.NODE_OPTIONS, '--enable-source-maps'].filter(Boolean).join(' '),
    VOICE_PROVIDER: env.VOICE_PROVIDER ?? 'simulator',
    // Local fakes (Slack, Clio) listen on 127.0.0.1; production leaves this unset (false).
    ALLOW_PRIVATE_URLS: env.ALLOW_PRIVATE_URLS ?? 'true',
    // The simulator dials no one: it may call at any hour, as often as one tries, and a campaign
    // created without a purpose calls leads without consent (each process says so in a warn line).
    // With a real provider the compliance defaults stand.
    ...((env.VOICE_PROVIDER ?? 'simulator') === 'simulator'
      ? {
          CALLING_HOURS: env.CALLING_HOURS ?? '00:00-24:00',
          DIAL_ATTEMPTS_PER_DAY: env.DIAL_ATTEMPTS_PER_DAY ?? '1000',
          COMPLIANCE_STATE_RULES: env.COMPLIANCE_STATE_RULES ?? 'false',
          CAMPAIGN_DEFAULT_PURPOSE: env.CAMPAIGN_DEFAULT_PURPOSE ?? 'informational',
          INFORMATIONAL_CONSENT: env.INFORMATIONAL_CONSENT ?? 'false',
        }
      : {}),
  };
  try {
    // Also reads REDIS_TLS_CA, so an unreadable CA stops here, before any child starts.
    redisSettings(loadConfig(childEnv));
  } catch (err) {
    return shutdown(1, err instanceof ConfigError ? err.message : message(err));
  }

  if (stopping) return;
  const release = runEntry('core/platform/db/release.ts', childEnv, 'release');
  const { code } = await release.exited;
  if (code !== 0) return shutdown(1, 'release failed; see above');

  for (const name of ['web', 'worker'] as const) {
    if (stopping) return;
    const ready = name === 'web' ? { url: `http://127.0.0.1:${port}/readyz` } : undefined;
    const child = runProcess(name, childEnv, ready);
    children.push(child);
    void child.exited.then(({ code, signal }) => {
      if (stopping) return;
      // Exit 0 is a stop it was asked for: a Ctrl-C reaches the whole group, and the child may
      // be done before our own handler has run.
      if (code === 0) void shutdown(0);
      else void shutdown(1, `${name} exited with ${signal ?? `code ${code}`}; stopping`);
    });
  }
  await children[0]!.ready;
  const base = childEnv.PUBLIC_BASE_URL!;
  const lines = [
    '',
    'Intake Service is running.',
    `  API            ${base}`,
    `  API reference  ${base}/docs`,
    `  Bull Board     ${base}/admin/queues   (any user name, the platform key as password)`,
    `  Widget test    ${base}/api/test-widget?firmSlug=<slug>   (the same, or a firm's API key)`,
    `  Health         ${base}/healthz  ${base}/readyz  ${base}/metrics`,
    `  Voice provider ${childEnv.VOICE_PROVIDER}`,
    `  Firm URLs      ${childEnv.ALLOW_PRIVATE_URLS === 'true' ? 'http:// and loopback allowed (ALLOW_PRIVATE_URLS=true)' : 'https:// to public hosts only'}`,
    `  Redis          ${stores.redisUrl}`,
    `  MongoDB        ${stores.mongodbUri}`,
    generatedKey
      ? `  Platform key   ${childEnv.ADMIN_API_KEY}   (generated for this run; set ADMIN_API_KEY to keep one)`
      : '  Platform key   the ADMIN_API_KEY you set',
    '',
    'Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(lines.join('\n'));
}

// A failure anywhere is one line and a clean stop, never a stack trace.
await main().catch((err: unknown) => shutdown(1, message(err)));
