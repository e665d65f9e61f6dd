// The stack the fuzzer runs against: local Redis + FerretDB (scripts/local/services.ts) unless
// REDIS_URL / MONGODB_URI are set, then release, web and worker as child processes (as
// `npm start` runs them) with simulator voices. Each app's output goes to .local/fuzz/<name>.log.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { freePort, startLocalServices, type LocalServices } from '../local/services.js';
import { outDir, root, say, settings } from './settings.js';

export interface Stack {
  base: string;
  adminKey: string;
  /** "web exited (1) during the run; see ..." for each app that died before stop(). */
  crashed: string[];
  /** Stops the apps, then the local services; safe to call more than once. */
  stop: () => Promise<void>;
}

interface Proc {
  name: string;
  child: ChildProcess;
  log: WriteStream;
}

function startProc(entry: string, env: NodeJS.ProcessEnv, name: string): Proc {
  const log = createWriteStream(join(outDir, `${name}.log`));
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, entry)], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  return { name, child, log };
}

const exited = (c: ChildProcess): boolean => c.exitCode !== null || c.signalCode !== null;

function stopProc(p: Proc, graceMs = 30_000): Promise<void> {
  return new Promise((resolve) => {
    const finish = () => p.log.end(() => resolve());
    if (exited(p.child)) return finish();
    const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
    p.child.once('close', () => {
      clearTimeout(timer);
      finish();
    });
    p.child.kill('SIGTERM');
  });
}

async function waitForReady(url: string, web: Proc, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (exited(web.child)) throw new Error(`web exited with code ${web.child.exitCode}; see ${web.log.path}`);
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

/** The same server, a database of its own (the fuzzer writes thousands of junk records). */
function freshDatabase(uri: string): string {
  const url = new URL(uri);
  url.pathname = `/fuzz_${randomBytes(4).toString('hex')}`;
  return url.toString();
}

/**
 * Starts the stack. `onStarted` receives its stop function as soon as there is anything to
 * stop, so that a signal during start-up still stops what has started.
 */
export async function startStack(onStarted: (stop: () => Promise<void>) => void): Promise<Stack> {
  let local: LocalServices | undefined = undefined;
  const procs: Proc[] = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await Promise.all(procs.map((p) => stopProc(p)));
      await local?.stop();
    })());
  onStarted(stop);

  local = await startLocalServices(
    { redisUrl: process.env.REDIS_URL, mongodbUri: process.env.MONGODB_URI },
    (l) => say(l),
  );
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const adminKey = `adm_${randomBytes(24).toString('base64url')}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    REDIS_URL: local.redisUrl,
    MONGODB_URI: freshDatabase(local.mongodbUri),
    ADMIN_API_KEY: adminKey,
    SESSION_SECRET: randomBytes(32).toString('base64url'),
    PORT: String(port),
    PUBLIC_BASE_URL: base,
    VOICE_PROVIDER: 'simulator',
    SIM_CALL_MS: '200',
    LOG_LEVEL: settings.logLevel,
    // The fuzzer is one client sending thousands of requests a minute.
    RATE_LIMIT_PER_MINUTE: '1000000',
    QUEUE_PREFIX: `fuzz${randomBytes(3).toString('hex')}`,
  };
  // Nothing leaves the machine: no LLM, no mail server.
  for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'SMTP_URL', 'RETELL_API_KEY']) delete env[name];

  const release = startProc('core/platform/db/release.ts', env, 'release');
  procs.push(release);
  const releaseCode = await new Promise<number>((r) => release.child.once('exit', (c) => r(c ?? 1)));
  if (releaseCode !== 0) throw new Error(`release exited with code ${releaseCode}; see ${release.log.path}`);
  const crashed: string[] = [];
  for (const [entry, name] of [
    ['api/server.ts', 'web'],
    ['workers/main.ts', 'worker'],
  ] as const) {
    const p = startProc(entry, env, name);
    p.child.once('exit', (code, signal) => {
      if (stopping === undefined) {
        crashed.push(`${name} exited (${code ?? signal}) during the run; see ${p.log.path}`);
        say(crashed.at(-1)!);
      }
    });
    procs.push(p);
  }
  await waitForReady(`${base}/readyz`, procs[1]!, 60_000);
  say(`stack ready at ${base} (logs in ${outDir})`);
  return { base, adminKey, crashed, stop };
}
