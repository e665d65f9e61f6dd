import { type ChildProcess } from 'node:child_process';
import { startOnFreePorts, type Exit } from '../../scripts/local/launcher.js';
import { freePort } from '../../scripts/local/ports.js';
import { launchAsProcfile } from '../../scripts/local/procfile.js';

/** The real web entry (api/server.ts) as a child process on its own port, as the Procfile runs it. */
export async function startWebProcess(
  env: Record<string, string>,
  /** A port chosen beforehand (to name it in PUBLIC_BASE_URL); a longer start-up allowance. */
  options: { port?: number; readyTimeoutMs?: number } = {},
): Promise<{ child: ChildProcess; baseUrl: string; stop(): Promise<Exit> }> {
  // A port of our choosing may be taken before the child binds it: it then exits at start, and is
  // started again on another (a caller's own port is the caller's to choose again).
  if (options.port === undefined) {
    return startOnFreePorts(async () => startWebProcess(env, { ...options, port: await freePort() }));
  }
  const port = options.port;
  const baseUrl = `http://127.0.0.1:${port}`;
  const web = launchAsProcfile(
    'web',
    { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' },
    {
      name: 'web child',
      output: { prefix: '[web child] ', to: 'stderr' },
      ready: { url: `${baseUrl}/readyz` },
      // Only a guard against a child that never listens: a busy machine (three forks, each starting
      // children under tsx) has taken over 30 s to start one that was fine.
      readyTimeoutMs: options.readyTimeoutMs ?? 90_000,
    },
  );
  await web.ready;
  return {
    child: web.child,
    baseUrl,
    // SIGTERM, and SIGKILL only after the process's own deadline (SHUTDOWN_TIMEOUT_MS) and a
    // margin: a web process slowed by a busy machine still sends its last spans and exits 0.
    stop: () => web.stop('SIGTERM', Number(env.SHUTDOWN_TIMEOUT_MS ?? 25_000) + 5_000),
  };
}
