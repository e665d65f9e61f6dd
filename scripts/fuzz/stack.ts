// The stack the fuzzer runs against: local Redis + FerretDB (scripts/local/services.ts) unless
// REDIS_URL / MONGODB_URI are set, then release, web and worker as child processes (as
// `npm start` runs them) with simulator voices. Each app's output goes to .local/fuzz/<name>.log.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { entryArgs } from '../local/compiled.js';
import { launch, type Launched } from '../local/launcher.js';
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

/** Starts `entry` with its output in a fresh .local/fuzz/<name>.log. */
async function startProc(entry: string, env: NodeJS.ProcessEnv, name: string, ready?: { url: string }) {
  const logFile = join(outDir, `${name}.log`);
  await writeFile(logFile, '');
  const proc = launch({
    name,
    command: process.execPath,
    args: entryArgs(entry),
    cwd: root,
    env,
    output: { file: logFile },
    ...(ready === undefined ? {} : { ready }),
  });
  return { proc, logFile };
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
  const procs: Launched[] = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await Promise.all(procs.map((p) => p.stop('SIGTERM', 30_000)));
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
    SECRETS_KEY: randomBytes(32).toString('base64'),
    PORT: String(port),
    PUBLIC_BASE_URL: base,
    VOICE_PROVIDER: 'simulator',
    SIM_CALL_MS: '200',
    // Runs at any hour and dials numbers again and again: the compliance defaults widened (the
    // gate still decides and records every dial; each process says so in a warn line).
    CALLING_HOURS: '00:00-24:00',
    DIAL_ATTEMPTS_PER_DAY: '1000000',
    COMPLIANCE_STATE_RULES: 'false',
    CAMPAIGN_DEFAULT_PURPOSE: 'informational',
    INFORMATIONAL_CONSENT: 'false',
    LOG_LEVEL: settings.logLevel,
    // The fuzzer is one client sending thousands of requests a minute.
    RATE_LIMIT_PER_MINUTE: '1000000',
    QUEUE_PREFIX: `fuzz${randomBytes(3).toString('hex')}`,
  };
  // Nothing leaves the machine: no LLM, no mail server.
  for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'SMTP_URL', 'RETELL_API_KEY']) delete env[name];

  const release = await startProc('core/platform/db/release.ts', env, 'release');
  procs.push(release.proc);
  const { code } = await release.proc.exited;
  if (code !== 0) throw new Error(`release exited with code ${code}; see ${release.logFile}`);
  const crashed: string[] = [];
  for (const [entry, name] of [
    ['api/server.ts', 'web'],
    ['workers/main.ts', 'worker'],
  ] as const) {
    const ready = name === 'web' ? { url: `${base}/readyz` } : undefined;
    const { proc, logFile } = await startProc(entry, env, name, ready);
    void proc.exited.then(({ code, signal }) => {
      if (stopping === undefined) {
        crashed.push(`${name} exited (${code ?? signal}) during the run; see ${logFile}`);
        say(crashed.at(-1)!);
      }
    });
    procs.push(proc);
  }
  await procs[1]!.ready;
  say(`stack ready at ${base} (logs in ${outDir})`);
  return { base, adminKey, crashed, stop };
}
