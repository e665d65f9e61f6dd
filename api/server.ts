// The Procfile's web process: HTTP on PORT, graceful drain on SIGTERM.
import { exitOnConfigError, loadConfigOrExit } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { stopOnSignals } from '../core/platform/process.js';
import { createServices } from '../core/wiring/services.js';
import { exitWith, guardRedisTls } from '../core/platform/redis-tls.js';
import { startWeb } from './web.js';

const config = loadConfigOrExit();
const log = createLogger(config.logLevel, 'web');
const services = exitOnConfigError(() => createServices(config, log, 'producer'));
guardRedisTls(services.redis, config, log, exitWith);
const web = await startWeb(services);
log.info({ port: web.port }, 'web listening');
stopOnSignals(log, config.shutdownTimeoutMs, () => web.stop());
