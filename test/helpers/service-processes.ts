import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startOnFreePorts, type Exit, type Launched } from '../../scripts/local/launcher.js';
import { freePort } from '../../scripts/local/ports.js';
import { launchAsProcfile } from '../../scripts/local/procfile.js';

/** One entry point (api/server.ts or workers/main.ts) as a child, its output kept in a file. */
export interface ServiceProcess {
  launched: Launched;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): Promise<string>;
  stop(): Promise<Exit>;
}

export function startServiceProcess(
  entry: 'api/server.ts' | 'workers/main.ts',
  env: Record<string, string>,
  logFile: string,
  options: { readyUrl?: string } = {},
): ServiceProcess {
  const type = entry === 'api/server.ts' ? 'web' : 'worker';
  const launched = launchAsProcfile(
    type,
    { ...process.env, LOG_LEVEL: 'warn', ...env },
    {
      name: entry,
      output: { file: logFile },
      ...(options.readyUrl === undefined ? {} : { ready: { url: options.readyUrl } }),
      // Loading the service through tsx takes seconds on an idle machine, several times that on
      // the loaded two-core CI machine (npm-start-stop.test.ts waits 180 s too).
      readyTimeoutMs: 180_000,
    },
  );
  return {
    launched,
    output: () => readFile(logFile, 'utf8').catch(() => ''),
    stop: () => launched.stop(),
  };
}

/**
 * The web process (ready once /readyz answers 200) and a worker process, as the Procfile runs
 * them; `workerEnv` is added to the worker's environment only.
 */
export async function startServiceProcesses(
  env: Record<string, string>,
  logDir: string,
  name: string,
  workerEnv: Record<string, string> = {},
): Promise<{ baseUrl: string; web: ServiceProcess; worker: ServiceProcess; stop(): Promise<void> }> {
  // A port taken between its choice and the web's bind: the web exits at start, and both start
  // again on another.
  return startOnFreePorts(async () => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const webEnv = { ...env, PORT: String(port), PUBLIC_BASE_URL: baseUrl };
    const web = startServiceProcess('api/server.ts', webEnv, join(logDir, `${name}-web.log`), {
      readyUrl: `${baseUrl}/readyz`,
    });
    const worker = startServiceProcess(
      'workers/main.ts',
      { ...webEnv, ...workerEnv },
      join(logDir, `${name}-worker.log`),
    );
    try {
      await web.launched.ready;
    } catch (err) {
      await worker.stop();
      throw err;
    }
    return {
      baseUrl,
      web,
      worker,
      async stop() {
        await Promise.all([web.stop(), worker.stop()]);
      },
    };
  });
}
