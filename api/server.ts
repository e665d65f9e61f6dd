// The Procfile's web process: HTTP on PORT, graceful drain on SIGTERM.
import { loadConfigOrExit } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { stopOnSignals } from '../core/platform/process.js';
import { createServices } from '../core/wiring/services.js';
import { startWeb } from './web.js';

const config = loadConfigOrExit();
const log = createLogger(config.logLevel, 'web');
const web = await startWeb(createServices(config, log, 'producer'));
log.info({ port: web.port }, 'web listening');
stopOnSignals(log, config.shutdownTimeoutMs, () => web.stop());
