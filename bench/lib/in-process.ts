// The service's web, and its workers when asked, in the bench's own process over a fresh database
// and queue prefix (bench/dnc-queued.ts, bench/ringcentral.ts, bench/webhook-flood.ts): the web
// listens on a free port that is also its PUBLIC_BASE_URL (the simulator's webhooks come back to
// it). Everything is removed at exit: the workers and the web stop, the queues and the database go.
import { loadConfig, type Config } from '../../core/platform/config.js';
import { createLogger } from '../../core/platform/logger.js';
import { createServices, type Services } from '../../core/wiring/services.js';
import { ensureIndexes } from '../../core/platform/db/indexes.js';
import { startWeb } from '../../api/web.js';
import { freePort } from '../../scripts/local/ports.js';
import { startWorkers } from '../../workers/runner.js';
import { processors } from '../../workers/processors/index.js';
import { ApiClient } from '../../test/helpers/client.js';
import { atExit, freshEnvironment, type Stores } from './stack.js';

export interface InProcessApp {
  env: Record<string, string>;
  adminKey: string;
  config: Config;
  /** The web's services (a producer), for the bench's own reads and writes. */
  services: Services;
  base: string;
  admin: ApiClient;
  /** Starts the workers in this process (once); they stop at exit. */
  startWorkers(): void;
}

export async function startInProcessApp(
  stores: Stores,
  name: string,
  env: Record<string, string> = {},
): Promise<InProcessApp> {
  const port = await freePort();
  const fresh = freshEnvironment(stores, name, {
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    ...env,
  });
  const config = loadConfig(fresh.env);
  const log = createLogger('warn', 'bench');
  const services = createServices(config, log, 'producer');
  atExit(() => services.mongo.db.dropDatabase().then(() => services.close()));
  atExit(async () => {
    // The jobs still delayed go with the run's queues.
    for (const queue of Object.values(services.queues)) await queue.obliterate({ force: true });
  });
  await ensureIndexes(services.mongo.db);
  const web = await startWeb(services, '127.0.0.1');
  atExit(() => web.stop());
  const base = `http://127.0.0.1:${web.port}`;
  let started = false;
  return {
    env: fresh.env,
    adminKey: fresh.adminKey,
    config,
    services,
    base,
    admin: new ApiClient(base).withToken(fresh.adminKey),
    startWorkers() {
      if (started) return;
      started = true;
      const workers = startWorkers(createServices(config, log, 'worker'), processors);
      atExit(() => workers.stop());
    },
  };
}
