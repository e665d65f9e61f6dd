import { warnIfComplianceWidened } from '../core/domain/compliance/compliance-defaults.js';
import { exitOnConfigError, type Config } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { startingWork } from '../core/platform/held-signals.js';
import { stopOnSignals } from '../core/platform/process.js';
import { exitWith, guardRedisTls } from '../core/platform/redis-tls.js';
import { createServices } from '../core/wiring/services.js';
import { startWeb } from './web.js';

/** The web process once configuration (and tracing) are in place: see api/server.ts. */
export async function runWeb(config: Config): Promise<void> {
  const log = createLogger(config.logLevel, 'web');
  const services = exitOnConfigError(() => createServices(config, log, 'producer'));
  guardRedisTls(services.redis, config, log, exitWith);
  warnIfComplianceWidened(config, log);
  // From here a SIGTERM waits for the stop below (the server may be listening before it is set).
  startingWork();
  const web = await startWeb(services);
  log.info({ port: web.port }, 'web listening');
  stopOnSignals(log, config.shutdownTimeoutMs, () => web.stop());
}
